package origin

import (
	"context"
	"io"
	"log/slog"
	"net/http"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/plugin"
	"github.com/depot-registry/depot/shared/httpx"
)

// newPlugins starts the WebAssembly engine and the registry of installed
// plugins, each served by a format server built as the built-in ones are
// (mk).
func (o *Origin) newPlugins(env *format.Env, mk func(format.Format) *format.Server, log *slog.Logger) (*plugin.Registry, error) {
	engine, err := plugin.NewEngine(context.Background(), plugin.DefaultLimits, log.With("component", "plugins"))
	if err != nil {
		return nil, err
	}
	o.plugins = engine
	open := func(ctx context.Context, digest string) (io.ReadCloser, error) { return o.blobs.Open(ctx, digest) }
	return plugin.NewRegistry(engine, o.store, env, open, mk, log.With("component", "plugins")), nil
}

// servePlugins answers the paths of the installed plugins, and passes
// any other to next.
func (o *Origin) servePlugins(reg *plugin.Registry, wrap func(http.Handler) http.Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, prefix, ok := reg.Lookup(r.Context(), r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if l.Server == nil {
			w.Header().Set("Retry-After", "10")
			http.Error(w, "plugin "+l.Record.ID+" is installed but could not be loaded on this node: "+l.Err.Error(), http.StatusServiceUnavailable)
			return
		}
		wrap(httpx.NewFormatHandler(l.Server, prefix, o.blobs)).ServeHTTP(w, r)
	})
}
