// Package ldaptest runs a real OpenLDAP slapd for tests, on loopback, with
// its own configuration and database in a temporary directory, and a
// small directory: a service account, users and groups the test adds,
// moves and removes while it runs. It can serve StartTLS, and ldaps on a
// second port, with a certificate of a CA made for the test.
package ldaptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goldap "github.com/go-ldap/ldap/v3"
)

// The directory's names.
const (
	Base        = "dc=example,dc=org"
	People      = "ou=people," + Base
	Groups      = "ou=groups," + Base
	ServiceDN   = "cn=svc,ou=system," + Base
	ServicePW   = "svc-password"
	rootDN      = "cn=admin," + Base
	startupWait = time.Minute // well under a second alone; more on a machine busy with a whole test run
)

// Slapd is a running slapd.
type Slapd struct {
	t      *testing.T
	binary string
	dir    string
	URL    string // ldap://127.0.0.1:<port>
	CAFile string // PEM of the CA that signed its certificate (TLS only)
	// LDAPSURL is ldaps://127.0.0.1:<port>, TLS from the first byte with
	// the certificate of CAFile (TLS only).
	LDAPSURL string
	tls      bool
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan error
	port     int
	tlsPort  int // ldaps, with TLS
	stopped  bool
	// rootPW is this slapd's own: a bind with it proves the server on
	// the port is this one, not another test's that took the port first.
	rootPW string
}

// Options of Start.
type Options struct {
	// TLS gives slapd a certificate for 127.0.0.1 signed by a CA of the
	// test (CAFile), for StartTLS on URL and for ldaps on LDAPSURL.
	TLS bool
}

// binary finds slapd: skipped without it unless DEPOT_REQUIRE_CLIENTS is
// set, as every test of a real client or server.
func binary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"slapd", "/usr/sbin/slapd"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
		t.Fatal("slapd is required (DEPOT_REQUIRE_CLIENTS is set) but not installed (Debian: apt-get install slapd)")
	}
	t.Skip("slapd not installed (Debian: apt-get install slapd)")
	return ""
}

// Start runs slapd with the base entries and the service account, and
// stops it when the test ends.
func Start(t *testing.T, opts Options) *Slapd {
	t.Helper()
	s := &Slapd{t: t, binary: binary(t), dir: t.TempDir(), tls: opts.TLS, rootPW: rand.Text()}
	if err := os.Mkdir(filepath.Join(s.dir, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	tlsConf := ""
	if opts.TLS {
		s.CAFile = s.writeCerts()
		tlsConf = fmt.Sprintf("TLSCACertificateFile %s\nTLSCertificateFile %s\nTLSCertificateKeyFile %s\n",
			s.CAFile, filepath.Join(s.dir, "server.pem"), filepath.Join(s.dir, "server.key"))
	}
	conf := fmt.Sprintf(`include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile %[1]s/slapd.pid
argsfile %[1]s/slapd.args
%[4]s
database mdb
maxsize 33554432
suffix "%[2]s"
rootdn "%[5]s"
rootpw %[3]s
directory %[1]s/db
index objectClass eq
index uid eq
index member eq
access to attrs=userPassword
  by self write
  by anonymous auth
  by * none
access to *
  by users read
  by * none
`, s.dir, Base, SSHA(s.rootPW), tlsConf, rootDN)
	if err := os.WriteFile(filepath.Join(s.dir, "slapd.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(s.Stop)
	s.add("dcObject", Base, map[string][]string{"objectClass": {"top", "dcObject", "organization"}, "o": {"Example"}, "dc": {"example"}})
	for _, ou := range []string{"people", "groups", "system"} {
		s.add("ou", "ou="+ou+","+Base, map[string][]string{"objectClass": {"organizationalUnit"}, "ou": {ou}})
	}
	s.add("service account", ServiceDN, map[string][]string{"objectClass": {"organizationalRole", "simpleSecurityObject"},
		"cn": {"svc"}, "userPassword": {SSHA(ServicePW)}})
	return s
}

// start runs slapd on a free port, and with TLS on a second one for
// ldaps (again, after Stop: the same ports), and waits until it answers.
func (s *Slapd) start() {
	s.t.Helper()
	for attempt := 0; ; attempt++ {
		if s.port == 0 || attempt > 0 {
			s.port = freePort(s.t)
			if s.tls {
				s.tlsPort = freePort(s.t)
			}
		}
		if s.run() || attempt == 3 {
			return
		}
	}
}

// freePort is a loopback port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// run starts slapd on s.port (and s.tlsPort) and waits until it answers;
// false when a port was taken meanwhile (start picks others).
func (s *Slapd) run() bool {
	s.t.Helper()
	s.URL = fmt.Sprintf("ldap://127.0.0.1:%d", s.port)
	listen := s.URL + "/"
	if s.tls {
		s.LDAPSURL = fmt.Sprintf("ldaps://127.0.0.1:%d", s.tlsPort)
		listen += " " + s.LDAPSURL + "/"
	}
	out := &bytes.Buffer{}
	cmd := exec.Command(s.binary, "-f", filepath.Join(s.dir, "slapd.conf"), "-h", listen, "-d", "0")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	s.mu.Lock()
	s.cmd, s.done, s.stopped = cmd, done, false
	s.mu.Unlock()
	deadline := time.Now().Add(startupWait)
	for {
		select {
		case err := <-done:
			if strings.Contains(out.String(), "Address already in use") {
				return false
			}
			s.t.Fatalf("slapd exited at start (%v):\n%s", err, out)
		default:
		}
		if s.answers() {
			return true
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done // its output is whole, and no longer written
			s.t.Fatalf("slapd did not answer within %v:\n%s", startupWait, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answers reports whether this slapd answers on URL: a bind as its root
// succeeds (a connection alone could be another test's slapd, started
// on the same free port first, this one then exiting for it), and, with
// TLS, the ldaps port accepts connections (slapd opens every listener
// before it serves any, so this is only a check).
func (s *Slapd) answers() bool {
	c, err := goldap.DialURL(s.URL)
	if err != nil {
		return false
	}
	err = c.Bind(rootDN, s.rootPW)
	c.Close()
	if err != nil {
		return false
	}
	if s.tls {
		nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.tlsPort), time.Second)
		if err != nil {
			return false
		}
		nc.Close()
	}
	return true
}

// Stop stops slapd (the directory is down until Restart).
func (s *Slapd) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.cmd == nil {
		return
	}
	s.stopped = true
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Restart starts slapd again on the same ports, with the same data.
func (s *Slapd) Restart() {
	s.t.Helper()
	s.start()
}

// root binds as the directory's root, to change it.
func (s *Slapd) root() *goldap.Conn {
	s.t.Helper()
	c, err := goldap.DialURL(s.URL)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := c.Bind(rootDN, s.rootPW); err != nil {
		c.Close()
		s.t.Fatal(err)
	}
	return c
}

func (s *Slapd) add(what, dn string, attrs map[string][]string) {
	s.t.Helper()
	c := s.root()
	defer c.Close()
	req := goldap.NewAddRequest(dn, nil)
	for k, v := range attrs {
		req.Attribute(k, v)
	}
	if err := c.Add(req); err != nil {
		s.t.Fatalf("adding %s %s: %v", what, dn, err)
	}
}

// UserDN is the DN of the user uid.
func UserDN(uid string) string { return "uid=" + uid + "," + People }

// GroupDN is the DN of the group cn.
func GroupDN(cn string) string { return "cn=" + cn + "," + Groups }

// AddUser adds a person who signs in with uid and password; their
// displayName is "<Uid> Example".
func (s *Slapd) AddUser(uid, password, email string) {
	s.t.Helper()
	s.add("user", UserDN(uid), map[string][]string{"objectClass": {"inetOrgPerson"}, "uid": {uid}, "cn": {uid},
		"sn": {uid}, "displayName": {strings.ToUpper(uid[:1]) + uid[1:] + " Example"}, "mail": {email}, "userPassword": {SSHA(password)}})
}

// DeleteUser removes a person (and not their group memberships: a
// groupOfNames keeps the DN, as real directories often do).
func (s *Slapd) DeleteUser(uid string) {
	s.t.Helper()
	c := s.root()
	defer c.Close()
	if err := c.Del(goldap.NewDelRequest(UserDN(uid), nil)); err != nil {
		s.t.Fatalf("deleting %s: %v", uid, err)
	}
}

// SetPassword changes a person's password.
func (s *Slapd) SetPassword(uid, password string) {
	s.t.Helper()
	s.modify(UserDN(uid), func(m *goldap.ModifyRequest) { m.Replace("userPassword", []string{SSHA(password)}) })
}

// AddGroup adds a groupOfNames with members (uids).
func (s *Slapd) AddGroup(cn string, uids ...string) {
	s.t.Helper()
	var members []string
	for _, u := range uids {
		members = append(members, UserDN(u))
	}
	if len(members) == 0 {
		members = []string{ServiceDN} // groupOfNames needs a member
	}
	s.add("group", GroupDN(cn), map[string][]string{"objectClass": {"groupOfNames"}, "cn": {cn}, "member": members})
}

// AddMember puts uid in group cn; RemoveMember takes them out.
func (s *Slapd) AddMember(cn, uid string) {
	s.t.Helper()
	s.modify(GroupDN(cn), func(m *goldap.ModifyRequest) { m.Add("member", []string{UserDN(uid)}) })
}

// RemoveMember takes uid out of group cn.
func (s *Slapd) RemoveMember(cn, uid string) {
	s.t.Helper()
	s.modify(GroupDN(cn), func(m *goldap.ModifyRequest) { m.Delete("member", []string{UserDN(uid)}) })
}

// SetAttribute replaces attribute attr of person uid with values (none:
// removes it), as a directory's administrator marks an account, say.
func (s *Slapd) SetAttribute(uid, attr string, values ...string) {
	s.t.Helper()
	s.modify(UserDN(uid), func(m *goldap.ModifyRequest) { m.Replace(attr, values) })
}

func (s *Slapd) modify(dn string, change func(*goldap.ModifyRequest)) {
	s.t.Helper()
	c := s.root()
	defer c.Close()
	m := goldap.NewModifyRequest(dn, nil)
	change(m)
	if err := c.Modify(m); err != nil {
		s.t.Fatalf("modifying %s: %v", dn, err)
	}
}

// SSHA is the {SSHA} form of a password slapd checks binds against.
func SSHA(pw string) string {
	salt := make([]byte, 8)
	_, _ = rand.Read(salt)
	h := sha1.Sum(append([]byte(pw), salt...))
	return "{SSHA}" + base64.StdEncoding.EncodeToString(append(h[:], salt...))
}

// writeCerts makes a CA and a certificate for 127.0.0.1 it signed, and
// returns the CA's PEM file.
func (s *Slapd) writeCerts() string {
	s.t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "depot test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		s.t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	caCert, _ := x509.ParseCertificate(caDER)
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		s.t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(s.dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			s.t.Fatal(err)
		}
		return p
	}
	write("server.pem", "CERTIFICATE", leafDER)
	write("server.key", "PRIVATE KEY", keyDER)
	return write("ca.pem", "CERTIFICATE", caDER)
}
