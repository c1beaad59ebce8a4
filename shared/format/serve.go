package format

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/depot-registry/depot/shared/meta"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
)

// Authenticator checks the credential a request presents.
type Authenticator interface {
	Authenticate(ctx context.Context, authorization, remote string) (*auth.Principal, error)
}

// Server serves one format whatever the transport: it matches the route,
// authenticates, finds and authorises the repository the route names,
// runs the handler, hides the cause of a 500 behind the request id, tags
// a read's rendered document and answers 304 to a request that has it
// (see revalidate), and tells the audit log of every write. A transport
// (net/http on the origin, fasthttp on edges) only turns its request
// into a Request and writes the Response, opening a Blob from wherever
// it keeps blobs.
type Server struct {
	format Format
	env    *Env
	writer *Writer
	authn  Authenticator
	log    *slog.Logger
	routes []Route
	// OnWrite, when set, is told of every answered write route (the
	// audit log), with the status answered.
	OnWrite func(r *Request, status int)
}

// NewServer serves f, built over env. With a nil writer the node serves
// no writes: write routes answer 405 (an edge forwards them before they
// get here).
func NewServer(f Format, env *Env, w *Writer, authn Authenticator, log *slog.Logger) *Server {
	for _, name := range RepoFormats(f) {
		env.prefixes.Store(name, f.Prefix())
	}
	return &Server{format: f, env: env, writer: w, authn: authn, log: log, routes: f.Routes()}
}

// Format is the format served.
func (s *Server) Format() Format { return s.format }

// Route finds the route for method and path (see Match), for transports
// that decide something before serving (an edge forwards write routes).
func (s *Server) Route(method, path string) (*Route, map[string]string, bool) {
	return Match(s.routes, method, path)
}

// Serve answers r. The transport fills in what it knows of the request;
// Serve sets Params, Action, Principal and Repo.
func (s *Server) Serve(ctx context.Context, r *Request) *Response {
	if name := PluginID(s.format); !s.env.PluginEnabled(name) {
		return s.format.Error(r, Errorf(apierr.NotFound, "the %s format handler is disabled on this registry (nothing it stores is touched): "+
			"an administrator enables it with POST /api/v1/plugins/%s/enable", name, name))
	}
	route, params, pathOK := s.Route(r.Method, r.Path)
	if route == nil || (route.Write != nil && s.writer == nil) {
		return s.format.Error(r, &NotServedError{Method: r.Method, Path: r.Prefix + r.Path, PathServed: pathOK})
	}
	r.Params, r.Action = params, route.Action
	resp := s.serve(ctx, r, route)
	if resp.Status == 0 {
		resp.Status = http.StatusOK
	}
	if route.Write == nil {
		revalidate(r, resp)
	}
	if route.Write != nil && s.OnWrite != nil {
		s.OnWrite(r, resp.Status)
	}
	return resp
}

// Plugin is implemented by a format handler installed as a plugin, whose
// id is not its format's name.
type Plugin interface {
	PluginID() string
}

// PluginID is the id of f as a plugin: an installed plugin's own, a
// built-in handler's name.
func PluginID(f Format) string {
	if p, ok := f.(Plugin); ok {
		return p.PluginID()
	}
	return f.Name()
}

// ServeAs answers r for p, an in-process caller's principal (a migration
// writing as the administrator who made it), with everything else as
// Serve: the route's authorisation, the format's rules, the write path.
// No transport calls it: requests from the network are authenticated.
func (s *Server) ServeAs(ctx context.Context, p *auth.Principal, r *Request) *Response {
	if p == nil {
		return s.authError(r, auth.ErrBadCredentials)
	}
	r.as = p
	return s.Serve(ctx, r)
}

func (s *Server) serve(ctx context.Context, r *Request, route *Route) *Response {
	p := r.as // set by ServeAs only
	if p == nil {
		authorization := r.Header.Get("Authorization")
		if c, ok := s.format.(CredentialReader); ok {
			authorization = c.Credential(r)
		}
		var err error
		p, err = s.authn.Authenticate(ctx, authorization, r.RemoteAddr)
		if err == nil && !p.AcceptedOn(s.format.Name()) {
			// A registry token serves only the format it was issued for.
			err = auth.ErrBadCredentials
		}
		if err != nil {
			return s.authError(r, err)
		}
	}
	r.Principal = p
	var err error
	if v, ok := s.format.(Validator); ok {
		if err := v.Validate(r); err != nil {
			return s.Fail(r, err)
		}
	}
	if route.Action != "" {
		if r.Repo, err = s.env.Repo(r, r.Param("repo"), route.Action, RepoFormats(s.format)...); err != nil {
			if rnf := (*RepoNotFoundError)(nil); s.writer == nil && errors.As(err, &rnf) && rnf.Format == "" {
				// A node that holds no writes (an edge) holds only the
				// repositories assigned to it: an origin answers for
				// the others (and says whether there is one).
				err = fmt.Errorf("%w: %w", ErrUpstream, err)
			}
			return s.Fail(r, err)
		}
	}
	var resp *Response
	if route.Write != nil {
		ctx = meta.WithActor(ctx, p.Actor(), s.env.Time())
		resp, err = route.Write(ctx, r, s.writer)
	} else {
		resp, err = route.Read(ctx, r)
	}
	if err != nil {
		return s.Fail(r, err)
	}
	return resp
}

// Fail answers err in the format's own shape. A 500's cause is logged
// and the client gets only the request id; an error that came from the
// connection (see Request.Interrupted) is answered as such.
func (s *Server) Fail(r *Request, err error) *Response {
	if r.Interrupted != nil {
		if e := r.Interrupted(err); e != nil {
			err = e
		}
	}
	if errors.Is(err, ErrClientGone) {
		// Whatever the handler made of it, nobody is there to answer.
		return &Response{Status: StatusClientClosed, Header: http.Header{}, Abort: true}
	}
	if errors.Is(err, ErrUpstream) {
		resp := s.format.Error(r, Errorf(apierr.Unavailable, "this edge node cannot reach an origin to answer this; retry later").With(apierr.RetryAfter, 5))
		resp.Upstream = true
		return resp
	}
	switch Classify(err).Code {
	case apierr.Internal:
		s.log.Error("format handler failed", "request_id", r.RequestID, "format", s.format.Name(), "err", err)
		err = apierr.InternalError(r.RequestID)
	case apierr.InsufficientStorage:
		s.log.Warn("upload refused: insufficient storage", "request_id", r.RequestID, "format", s.format.Name(), "err", err)
	}
	return s.format.Error(r, err)
}

// authError answers a failed credential check in the format's own shape:
// 401 with its challenge (forwarded to an origin from an edge that does
// not hold the credential's user), 429/503 with Retry-After when the check was
// throttled or the server is busy hashing, and a logged 500 when the
// check itself failed (a store error is not a wrong password).
func (s *Server) authError(r *Request, err error) *Response {
	switch {
	case errors.Is(err, auth.ErrBadCredentials):
		// Credentials were sent: say they were not accepted, not that
		// none came.
		return s.format.Error(r, Domain(err))
	case errors.Is(err, auth.ErrNotHere):
		// An edge that does not hold the credential's user has an origin
		// answer; with none reachable it cannot tell the credential from
		// a wrong one.
		resp := s.format.Error(r, Unauthorized())
		resp.Upstream = true
		return resp
	}
	return s.Fail(r, err)
}
