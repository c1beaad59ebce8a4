package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/depot-registry/depot/shared/config"
)

var loginCmd = &command{
	name: "login", args: "[--url URL] [--username NAME] [--password-stdin]", maxArgs: 0, local: true,
	summary: "sign in and keep an API token in the user's config",
	about: `Signs in to a Depot origin with a username and password, creates an API token for
this command line (named "depot-cli <host> <date>") and keeps the URL, the
username and the token, never the password, in the config file (mode 0600).
The session used to create the token is ended at once. Signing in again
replaces the stored token and revokes the old one.

The password is read from standard input with --password-stdin (one line),
else from $DEPOT_PASSWORD, else asked on the terminal. An initial password
that must be changed is changed here when a terminal can ask for the new one.

The token has the "admin" scope for an administrator (needed to manage users,
edge nodes and webhooks) and "repository:admin" for other users, unless
--scopes says otherwise; it does not expire unless --expires says when.

  echo "$PASSWORD" | depot login --url https://depot.example.com --username ci --password-stdin
`,
	setup: func(set *config.Set) func(*session, []string) error {
		var username, password, scopes string
		var stdin bool
		var expires time.Duration
		set.String(&username, "username", "DEPOT_USERNAME", "the user to sign in as (default: the one stored, "+
			"else asked on the terminal)")
		set.Bool(&stdin, "password-stdin", "", "read the password from the first line of standard input")
		set.String(&password, "", "DEPOT_PASSWORD", "the password, for scripts that cannot pipe it (a flag would show it "+
			"in the process list)")
		set.String(&scopes, "scopes", "", `the new token's scopes, comma-separated ("admin", "repository:<action>[:<repo>]"; `+
			`default: admin for administrators, repository:admin for others)`)
		set.Duration(&expires, "expires", "", "how long the token lasts, e.g. 2160h (90 days); 0: until revoked")
		return func(s *session, _ []string) error {
			return s.login(username, password, stdin, scopes, expires)
		}
	},
}

var logoutCmd = &command{
	name: "logout", maxArgs: 0, local: true,
	summary: "revoke the stored API token and forget it",
	about: `Revokes the API token depot login stored (with the token itself) and removes it from
the config file (the URL and username stay, for the next depot login).`,
	setup: func(*config.Set) func(*session, []string) error {
		return func(s *session, _ []string) error { return s.logout() }
	},
}

// failure is a refusal the command explains itself (the API's 401 to a
// password is not a refused token).
type failure struct{ msg string }

func (e *failure) Error() string { return e.msg }

func failf(format string, args ...any) error { return &failure{fmt.Sprintf(format, args...)} }

func (s *session) login(username, password string, stdin bool, scopes string, expires time.Duration) error {
	if s.url == "" {
		return usageError("give the address of your Depot: depot login --url https://depot.example.com (or DEPOT_URL)")
	}
	if username == "" && s.cfg.URL == s.url {
		username = s.cfg.Username
	}
	var err error
	if username == "" {
		if username, err = s.readLine("Username: "); err != nil {
			return usageError("give --username (or DEPOT_USERNAME): " + err.Error())
		}
	}
	if stdin || password == "" {
		if password, err = s.readSecret("Password for "+username+": ", stdin); err != nil {
			return err
		}
	}
	if u, _ := url.Parse(s.url); u.Scheme == "http" && !loopback(u.Hostname()) {
		s.warnf("warning: %s is plain HTTP: the password crosses the network unencrypted", s.url)
	}
	anon := s.client.withToken("")
	pair, err := anon.Login(s.ctx, username, password)
	if err != nil {
		return signInRefused(s, username, err)
	}
	if pair.PasswordChangeRequired {
		if pair, err = s.changeInitialPassword(anon, pair, username, password, stdin); err != nil {
			return err
		}
	}
	sess := s.client.withToken(pair.AccessToken)
	defer func() { _ = sess.Logout(s.ctx) }() // the session made the token; it is not needed after
	me, err := sess.Me(s.ctx)
	if err != nil {
		return err
	}
	var scopeList []string
	switch {
	case scopes != "":
		scopeList = splitList(scopes)
	case me.Value.Role == "admin":
		scopeList = []string{"admin"}
	default:
		scopeList = []string{"repository:admin"}
	}
	in := NewToken{Name: tokenName(), Scopes: scopeList}
	if expires > 0 {
		at := time.Now().Add(expires).UTC()
		in.ExpiresAt = &at
	}
	tok, err := sess.CreateToken(s.ctx, in)
	if err != nil {
		return err
	}
	old := s.cfg
	cfg := userConfig{URL: s.url, Username: me.Value.Username, Token: tok.Value.Token, TokenID: tok.Value.ID,
		TokenName: tok.Value.Name, SignedIn: time.Now().UTC().Truncate(time.Second)}
	if err := saveConfig(s.cfgPath, cfg); err != nil {
		_ = sess.RevokeToken(s.ctx, tok.Value.ID) // nobody could use it
		return fmt.Errorf("cannot write %s: %w", s.cfgPath, err)
	}
	if old.Token != "" && old.TokenID != "" && old.TokenID != tok.Value.ID {
		s.revokeReplaced(sess, old, me.Value.Username)
	}
	expiry := "does not expire"
	if in.ExpiresAt != nil {
		expiry = "expires " + when(*in.ExpiresAt) + " UTC"
	}
	fmt.Fprintf(s.io.Out, "Signed in to %s as %s.\nAPI token %q (%s; %s) stored in %s.\n",
		s.url, me.Value.Username, tok.Value.Name, strings.Join(tok.Value.Scopes, ", "), expiry, s.cfgPath)
	return nil
}

// signInRefused words a refused sign-in: a 401 there is a wrong
// password, not a refused token.
func signInRefused(s *session, username string, err error) error {
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
		return failf("%s refused the sign-in of %s: %v", s.url, username, err)
	}
	return err
}

// changeInitialPassword changes a password that must be changed, asking
// the new one on the terminal, and signs in with it.
func (s *session) changeInitialPassword(anon *Client, pair TokenPair, username, current string, stdin bool) (TokenPair, error) {
	sess := anon.withToken(pair.AccessToken)
	if stdin || !s.terminal() {
		_ = sess.Logout(s.ctx)
		return pair, failf("the password of %s must be changed before anything else: run depot login on a terminal, "+
			"which asks for a new one (or PUT /api/v1/users/me with current_password and password)", username)
	}
	s.warnf("The password of %s must be changed first.", username)
	pw, err := s.readSecret("New password: ", false)
	if err != nil {
		return pair, err
	}
	again, err := s.readSecret("New password again: ", false)
	if err != nil {
		return pair, err
	}
	if pw != again {
		return pair, usageError("the two new passwords differ")
	}
	if err := sess.ChangePassword(s.ctx, current, pw); err != nil {
		_ = sess.Logout(s.ctx)
		return pair, err
	}
	_ = sess.Logout(s.ctx)
	pair, err = anon.Login(s.ctx, username, pw)
	if err != nil {
		return pair, signInRefused(s, username, err)
	}
	return pair, nil
}

// revokeReplaced revokes the token a new login replaced: with the new
// session when it is the same user's at the same URL (a narrow token
// cannot revoke itself), else with itself, where it was stored for.
// Failing is only worth a warning, and is not waited for long.
func (s *session) revokeReplaced(sess *Client, old userConfig, username string) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	var err error
	if old.URL == s.url && strings.EqualFold(old.Username, username) {
		err = sess.RevokeToken(ctx, old.TokenID)
	} else {
		err = s.client.at(old.URL).withToken(old.Token).RevokeToken(ctx, old.TokenID)
	}
	if err != nil && !isStatus(err, http.StatusNotFound) && !isStatus(err, http.StatusUnauthorized) {
		s.warnf("warning: the token %q that was stored for %s could not be revoked (%v): revoke it with depot token delete",
			old.TokenName, old.URL, err)
	}
}

func (s *session) logout() error {
	cfg := s.cfg
	if cfg.Token == "" {
		fmt.Fprintf(s.io.Out, "Not signed in (no token in %s).\n", s.cfgPath)
		return nil
	}
	c := s.client.at(cfg.URL).withToken(cfg.Token)
	s.url, s.tokenFrom = cfg.URL, "config"
	err := c.RevokeToken(s.ctx, cfg.TokenID)
	note := "revoked"
	switch {
	case err == nil:
	case isStatus(err, http.StatusUnauthorized), isStatus(err, http.StatusNotFound):
		note = "already refused by the server"
	default:
		return fmt.Errorf("the token could not be revoked, so it is kept in %s: %w", s.cfgPath, err)
	}
	cfg.Token, cfg.TokenID, cfg.TokenName = "", "", ""
	if err := saveConfig(s.cfgPath, cfg); err != nil {
		return fmt.Errorf("cannot write %s: %w", s.cfgPath, err)
	}
	fmt.Fprintf(s.io.Out, "Signed out of %s: API token %q %s and removed from %s.\n", s.url, s.cfg.TokenName, note, s.cfgPath)
	return nil
}

// tokenName names the token of a login: which machine, since when.
func tokenName() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown-host"
	}
	if len(host) > 60 {
		host = host[:60]
	}
	return "depot-cli " + host + " " + time.Now().UTC().Format("2006-01-02")
}

// terminal reports whether standard input is a terminal to ask on.
func (s *session) terminal() bool {
	f, ok := s.io.In.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// maxSecret bounds a secret read from standard input.
const maxSecret = 4096

// readSecret reads a password: the first line of standard input with
// fromStdin, else asked on the terminal without echo.
func (s *session) readSecret(prompt string, fromStdin bool) (string, error) {
	if fromStdin {
		line, err := bufio.NewReaderSize(io.LimitReader(s.io.In, maxSecret), maxSecret).ReadString('\n')
		if err != nil && err != io.EOF {
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return "", usageError("--password-stdin: standard input holds no password")
		}
		return line, nil
	}
	if !s.terminal() {
		return "", usageError("no terminal to ask for the password: pipe it in with --password-stdin")
	}
	fd := int(s.io.In.(*os.File).Fd())
	// Ctrl-C at the prompt ends the command, with the terminal's echo
	// back on (the default handler would leave it off).
	if state, err := term.GetState(fd); err == nil {
		interrupt := make(chan os.Signal, 1)
		signal.Notify(interrupt, os.Interrupt)
		done := make(chan struct{})
		defer func() { signal.Stop(interrupt); close(done) }()
		go func() {
			select {
			case <-interrupt:
				_ = term.Restore(fd, state)
				fmt.Fprintln(s.io.Err)
				os.Exit(130)
			case <-done:
			}
		}()
	}
	fmt.Fprint(s.io.Err, prompt)
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(s.io.Err)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// readLine asks a line on the terminal (echoed).
func (s *session) readLine(prompt string) (string, error) {
	if !s.terminal() {
		return "", errors.New("no terminal to ask on")
	}
	fmt.Fprint(s.io.Err, prompt)
	line, err := bufio.NewReader(io.LimitReader(s.io.In, maxSecret)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// loopback reports whether host is this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
