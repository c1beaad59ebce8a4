package edge

import (
	"context"
	"io"

	"github.com/valyala/fasthttp"

	"github.com/depot-registry/depot/edge/server"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/plugin"
)

// servePlugins has s serve the installed plugins' read routes from the
// replica and the cache (their writes go to an origin, as every format's
// do). Each module is read from the cache, which fetches it from an
// origin the first time; the plugin records come with the change feed.
func (e *Edge) servePlugins(s *server.Server, env *format.Env, authn *auth.Authenticator) {
	engine, err := plugin.NewEngine(context.Background(), plugin.DefaultLimits, e.log.With("component", "plugins"))
	if err != nil {
		e.log.Error("the plugin engine did not start: installed plugins are served by an origin", "err", err)
		return
	}
	open := func(ctx context.Context, digest string) (io.ReadCloser, error) { return e.cache.Get(ctx, digest) }
	mk := func(f format.Format) *format.Server { return format.NewServer(f, env, nil, authn, e.log) }
	e.engine = engine
	e.plugins = plugin.NewRegistry(engine, e.replica, env, open, mk, e.log.With("component", "plugins"))
	s.Plugins = func(ctx context.Context, path string) (server.Mount, bool) {
		l, prefix, ok := e.plugins.Lookup(ctx, path)
		if !ok || l.Server == nil {
			return server.Mount{}, false
		}
		return server.Mount{Prefix: prefix, Server: l.Server}, true
	}
}

// pluginNotHere reports whether path is an installed plugin's that the
// server did not serve: its module is not loaded on this node (the
// server's lookup waited for it already).
func (e *Edge) pluginNotHere(ctx *fasthttp.RequestCtx, path string) bool {
	return e.plugins.Claims(ctx, path)
}
