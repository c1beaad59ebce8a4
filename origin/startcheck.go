package origin

// What an origin checks before it starts, and the data directory a first
// start that failed leaves clean.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// probeAddrs binds the raft and gossip addresses a moment (then lets them
// go for raft and gossip to bind), so a port another program holds (8300
// and 8301 are Consul's defaults too) stops the start before the data
// directory is touched, naming the setting to change.
func (cfg *Config) probeAddrs() error {
	for _, a := range []struct{ addr, flag, env string }{
		{cfg.RaftAddr, "--raft-addr", "DEPOT_RAFT_ADDR"}, {cfg.GossipAddr, "--gossip-addr", "DEPOT_GOSSIP_ADDR"},
	} {
		if _, port, err := net.SplitHostPort(a.addr); err != nil || port == "0" {
			continue // checked where it is used
		}
		var err error
		var tcp net.Listener
		if tcp, err = net.Listen("tcp", a.addr); err == nil {
			tcp.Close()
			if a.flag == "--gossip-addr" { // gossip speaks UDP on the same port
				var udp net.PacketConn
				if udp, err = net.ListenPacket("udp", a.addr); err == nil {
					udp.Close()
				}
			}
		}
		if errors.Is(err, syscall.EADDRINUSE) { // other failures are reported where the address is used
			return fmt.Errorf("cannot listen on %s: another program is using it; choose another address with %s (or %s)", a.addr, a.flag, a.env)
		}
	}
	return nil
}

// check refuses settings no origin can run with.
func (cfg *Config) check() error {
	if cfg.MinFreeBytes < 0 {
		return fmt.Errorf("--min-free-bytes must not be negative, got %d", cfg.MinFreeBytes)
	}
	if cfg.BlobCopies < 0 || cfg.BlobCopies > maxBlobCopies {
		return fmt.Errorf("--blob-copies must be from 0 (every origin) to %d, got %d", maxBlobCopies, cfg.BlobCopies)
	}
	if cfg.GCGrace <= 0 || cfg.GCInterval < 0 {
		return fmt.Errorf("--gc-grace must be positive and --gc-interval not negative, got %v and %v", cfg.GCGrace, cfg.GCInterval)
	}
	if err := checkJoin(cfg.Join); err != nil {
		return err
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both to serve HTTPS, or neither")
	}
	if cfg.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
	}
	return cfg.Webhooks.Check()
}

// emptyDir reports whether dir is missing or empty (fresh), and whether
// it exists.
func emptyDir(dir string) (fresh, exists bool) {
	f, err := os.Open(dir)
	if err != nil {
		return errors.Is(err, os.ErrNotExist), false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF), true
}

// removeFresh removes what a failed first start wrote in dir: dir itself when
// the start made it.
func removeFresh(dir string, existed bool) {
	if !existed {
		_ = os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// checkJoin refuses a --join that is not a list of gossip addresses (an
// API URL, say, which the origin would otherwise try to reach for ever).
func checkJoin(join string) error {
	for _, a := range splitList(join) {
		host, port, err := net.SplitHostPort(a)
		n, perr := strconv.Atoi(port)
		if strings.Contains(a, "://") || err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("--join %q: give the gossip address (host:port, the --gossip-addr) of one or more running origins, "+
				"comma-separated, such as 10.0.0.11:8301; not their API URL", a)
		}
	}
	return nil
}
