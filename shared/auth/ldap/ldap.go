// Package ldap checks passwords against a company directory (OpenLDAP,
// Active Directory) and reads who a user is there: the service account
// binds, finds the user with a filter, the user's own bind checks the
// password, and the user's groups are searched. Connections are pooled
// and bounded; every operation has a timeout. Only origins use it: edges
// hold no directory settings (an origin checks an edge's passwords).
package ldap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	goldap "github.com/go-ldap/ldap/v3"
)

// ErrInvalidCredentials means the directory refused the password, or has
// no (or no single) user of that name: callers must not tell which.
var ErrInvalidCredentials = errors.New("ldap: invalid credentials")

// ErrUnavailable means the directory could not be asked (down,
// unreachable, too slow, every connection busy, or the service account
// refused): no verdict on the password.
var ErrUnavailable = errors.New("ldap: the directory is unavailable")

// ErrNotFound means the directory has no user of that name (Lookup).
var ErrNotFound = errors.New("ldap: no such user in the directory")

// Config is how to reach and read the directory.
type Config struct {
	// URL is ldap://host[:port] or ldaps://host[:port].
	URL string
	// StartTLS upgrades an ldap:// connection to TLS before binding.
	StartTLS bool
	// CAFile holds PEM certificates to trust for ldaps and StartTLS
	// (empty: the system's roots).
	CAFile string
	// BindDN and BindPassword are the service account that searches.
	BindDN, BindPassword string
	// BaseDN is where users are searched (the whole subtree).
	BaseDN string
	// UserFilter finds one user; {username} is replaced by the escaped
	// name. Default (uid={username}).
	UserFilter string
	// GroupBaseDN is where groups are searched (default BaseDN).
	GroupBaseDN string
	// GroupFilter finds the groups of a user: {dn} and {username} are
	// replaced by the user's escaped DN and name. A filter naming neither
	// is ANDed with (|(member={dn})(uniqueMember={dn})(memberUid={username})).
	// Default: that alternative alone.
	GroupFilter string
	// GroupAttribute is the attribute holding a group's name (default cn).
	GroupAttribute string
	// EmailAttribute holds a user's email (default mail).
	EmailAttribute string
	// Timeout bounds each operation and the wait for a connection
	// (default 5s); MaxConns bounds the connections open at once
	// (default 8).
	Timeout  time.Duration
	MaxConns int
}

// memberFilter is who is a member of a group, in the common schemas:
// groupOfNames, groupOfUniqueNames and posixGroup.
const memberFilter = "(|(member={dn})(uniqueMember={dn})(memberUid={username}))"

// maxGroups bounds the groups one user is given from the directory.
const maxGroups = 200

// Identity is a user as the directory says it is.
type Identity struct {
	DN       string
	Username string   // as the directory spells it (the user's uid, say)
	Email    string   // "" when the directory has none
	Name     string   // displayName, else cn; "" when the directory has neither
	Groups   []string // names of the user's groups, at most maxGroups
}

// Directory is a pool of connections to one directory.
type Directory struct {
	cfg  Config
	tls  *tls.Config // for ldaps and StartTLS
	host string
	// slots bounds the connections open at once; idle holds those not in
	// use, bound as the service account.
	slots chan struct{}
	idle  chan *goldap.Conn
}

// New checks cfg and returns a directory; it connects on first use.
func New(cfg Config) (*Directory, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "ldap" && u.Scheme != "ldaps") || u.Host == "" {
		return nil, fmt.Errorf("LDAP URL %q: want ldap://host[:port] or ldaps://host[:port]", cfg.URL)
	}
	if cfg.StartTLS && u.Scheme == "ldaps" {
		return nil, errors.New("LDAP: StartTLS is for ldap:// URLs; ldaps:// is TLS already")
	}
	if cfg.BaseDN == "" {
		return nil, errors.New("LDAP: the base DN users are searched under is required")
	}
	if cfg.UserFilter == "" {
		cfg.UserFilter = "(uid={username})"
	}
	if !strings.Contains(cfg.UserFilter, "{username}") {
		return nil, fmt.Errorf("LDAP user filter %q must contain {username}", cfg.UserFilter)
	}
	for name, f := range map[string]string{"user": cfg.UserFilter, "group": cfg.GroupFilter} {
		if f != "" {
			if _, err := goldap.CompileFilter(strings.NewReplacer("{username}", "x", "{dn}", "x").Replace(f)); err != nil {
				return nil, fmt.Errorf("LDAP %s filter %q: %v", name, f, err)
			}
		}
	}
	switch {
	case cfg.GroupFilter == "":
		cfg.GroupFilter = memberFilter
	case !strings.Contains(cfg.GroupFilter, "{dn}") && !strings.Contains(cfg.GroupFilter, "{username}"):
		cfg.GroupFilter = "(&" + cfg.GroupFilter + memberFilter + ")"
	}
	if cfg.GroupBaseDN == "" {
		cfg.GroupBaseDN = cfg.BaseDN
	}
	if cfg.GroupAttribute == "" {
		cfg.GroupAttribute = "cn"
	}
	if cfg.EmailAttribute == "" {
		cfg.EmailAttribute = "mail"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 8
	}
	d := &Directory{cfg: cfg, host: u.Hostname(), slots: make(chan struct{}, cfg.MaxConns), idle: make(chan *goldap.Conn, cfg.MaxConns)}
	d.tls = &tls.Config{ServerName: d.host, MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("LDAP CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("LDAP CA file %s holds no PEM certificate", cfg.CAFile)
		}
		d.tls.RootCAs = pool
	}
	return d, nil
}

// Close closes the idle connections.
func (d *Directory) Close() {
	for {
		select {
		case c := <-d.idle:
			c.Close()
		default:
			return
		}
	}
}

// conn takes an idle connection or opens one, bound as the service
// account, waiting for a free slot at most the timeout.
func (d *Directory) conn(ctx context.Context) (*goldap.Conn, error) {
	wait, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	select {
	case d.slots <- struct{}{}:
	case <-wait.Done():
		return nil, fmt.Errorf("%w: all %d connections are busy", ErrUnavailable, d.cfg.MaxConns)
	}
	select {
	case c := <-d.idle:
		if !c.IsClosing() {
			return c, nil
		}
	default:
	}
	c, err := d.dial()
	if err != nil {
		<-d.slots
		return nil, err
	}
	return c, nil
}

// dial opens a connection and binds it as the service account.
func (d *Directory) dial() (*goldap.Conn, error) {
	dialer := &net.Dialer{Timeout: d.cfg.Timeout}
	c, err := goldap.DialURL(d.cfg.URL, goldap.DialWithDialer(dialer), goldap.DialWithTLSConfig(d.tls))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	c.SetTimeout(d.cfg.Timeout)
	if d.cfg.StartTLS {
		if err := c.StartTLS(d.tls); err != nil {
			c.Close()
			return nil, fmt.Errorf("%w: StartTLS: %v", ErrUnavailable, err)
		}
	}
	if err := d.serviceBind(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (d *Directory) serviceBind(c *goldap.Conn) error {
	var err error
	if d.cfg.BindDN == "" {
		err = c.UnauthenticatedBind("")
	} else {
		err = c.Bind(d.cfg.BindDN, d.cfg.BindPassword)
	}
	if goldap.IsErrorWithCode(err, goldap.LDAPResultInvalidCredentials) {
		return fmt.Errorf("%w: the directory refused the service account %s (check LDAP_BIND_DN and LDAP_BIND_PASSWORD)",
			ErrUnavailable, d.cfg.BindDN)
	}
	if err != nil {
		return fmt.Errorf("%w: binding as the service account: %v", ErrUnavailable, err)
	}
	return nil
}

// release gives c back (bound as the service account again) or closes it
// when it failed.
func (d *Directory) release(c *goldap.Conn, ok bool) {
	defer func() { <-d.slots }()
	if !ok || c.IsClosing() {
		c.Close()
		return
	}
	select {
	case d.idle <- c:
	default:
		c.Close()
	}
}

// unavailable reports whether err is the directory's failure rather
// than an answer about the request: then the connection is not reused.
func unavailable(err error) bool {
	if err == nil || errors.Is(err, ErrInvalidCredentials) || errors.Is(err, ErrNotFound) {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var le *goldap.Error
	if errors.As(err, &le) {
		switch le.ResultCode {
		case goldap.ErrorNetwork, goldap.ErrorFilterCompile, goldap.LDAPResultBusy, goldap.LDAPResultUnavailable,
			goldap.LDAPResultServerDown, goldap.LDAPResultTimeout, goldap.LDAPResultTimeLimitExceeded,
			goldap.LDAPResultUnwillingToPerform, goldap.LDAPResultOperationsError:
			return true
		}
		return false
	}
	return true // not an LDAP answer: a transport failure
}

// Authenticate checks username's password with the directory and says
// who the user is there.
func (d *Directory) Authenticate(ctx context.Context, username, password string) (*Identity, error) {
	if username == "" || password == "" {
		// An empty password is an anonymous bind to many servers: never
		// a proof of anything.
		return nil, ErrInvalidCredentials
	}
	return d.with(ctx, func(c *goldap.Conn) (*Identity, error) {
		id, err := d.find(c, username)
		if err != nil {
			return nil, err
		}
		if err := c.Bind(id.DN, password); err != nil {
			if goldap.IsErrorWithCode(err, goldap.LDAPResultInvalidCredentials) {
				// Back to the service account before the connection is
				// reused; a failure there closes it.
				if berr := d.serviceBind(c); berr != nil {
					return nil, berr
				}
				return nil, ErrInvalidCredentials
			}
			return nil, fmt.Errorf("%w: binding as %s: %v", ErrUnavailable, id.DN, err)
		}
		if err := d.serviceBind(c); err != nil {
			return nil, err
		}
		return id, d.groups(c, id)
	})
}

// Lookup reads who username is in the directory, without a password
// (the sync of directory users): ErrNotFound when it has no such user.
func (d *Directory) Lookup(ctx context.Context, username string) (*Identity, error) {
	return d.with(ctx, func(c *goldap.Conn) (*Identity, error) {
		id, err := d.find(c, username)
		if errors.Is(err, ErrInvalidCredentials) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, err
		}
		return id, d.groups(c, id)
	})
}

// with runs fn on a pooled connection, which goes back to the pool
// unless the directory failed.
func (d *Directory) with(ctx context.Context, fn func(*goldap.Conn) (*Identity, error)) (*Identity, error) {
	c, err := d.conn(ctx)
	if err != nil {
		return nil, err
	}
	id, err := fn(c)
	d.release(c, !unavailable(err))
	if unavailable(err) && !errors.Is(err, ErrUnavailable) {
		err = fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return id, err
}

// find searches the one user named username.
func (d *Directory) find(c *goldap.Conn, username string) (*Identity, error) {
	filter := strings.ReplaceAll(d.cfg.UserFilter, "{username}", goldap.EscapeFilter(username))
	res, err := c.Search(goldap.NewSearchRequest(d.cfg.BaseDN, goldap.ScopeWholeSubtree, goldap.NeverDerefAliases,
		2, int(d.cfg.Timeout/time.Second), false, filter, []string{d.cfg.EmailAttribute, "uid", "displayName", "cn"}, nil))
	if goldap.IsErrorWithCode(err, goldap.LDAPResultSizeLimitExceeded) || goldap.IsErrorWithCode(err, goldap.LDAPResultNoSuchObject) {
		return nil, ErrInvalidCredentials // ambiguous, or the base hides it
	}
	if err != nil {
		return nil, err
	}
	if len(res.Entries) != 1 {
		return nil, ErrInvalidCredentials
	}
	e := res.Entries[0]
	id := &Identity{DN: e.DN, Username: username, Email: e.GetAttributeValue(d.cfg.EmailAttribute), Name: e.GetAttributeValue("displayName")}
	if id.Name == "" {
		id.Name = e.GetAttributeValue("cn")
	}
	if uid := e.GetAttributeValue("uid"); strings.EqualFold(uid, username) {
		id.Username = uid
	}
	return id, nil
}

// groups reads the names of id's groups.
func (d *Directory) groups(c *goldap.Conn, id *Identity) error {
	filter := strings.NewReplacer("{dn}", goldap.EscapeFilter(id.DN), "{username}", goldap.EscapeFilter(id.Username)).
		Replace(d.cfg.GroupFilter)
	res, err := c.Search(goldap.NewSearchRequest(d.cfg.GroupBaseDN, goldap.ScopeWholeSubtree, goldap.NeverDerefAliases,
		maxGroups, int(d.cfg.Timeout/time.Second), false, filter, []string{d.cfg.GroupAttribute}, nil))
	if err != nil && !goldap.IsErrorWithCode(err, goldap.LDAPResultSizeLimitExceeded) {
		if goldap.IsErrorWithCode(err, goldap.LDAPResultNoSuchObject) {
			return nil // no group base: no groups
		}
		return err
	}
	if res == nil {
		return nil
	}
	for _, e := range res.Entries {
		if name := e.GetAttributeValue(d.cfg.GroupAttribute); name != "" {
			id.Groups = append(id.Groups, name)
		}
	}
	return nil
}
