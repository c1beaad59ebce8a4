// Package origin runs a depot origin process for a benchmark: start it on
// a data directory, time it until it answers healthy, stop it.
package origin

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a running origin.
type Process struct {
	cmd     *exec.Cmd
	URL     string
	Started time.Time
	logPath string
	done    chan error
}

// Options of one start.
type Options struct {
	Bin      string   // the depot binary
	DataDir  string   // --data-dir
	Listen   string   // --listen host:port
	RaftAddr string   // --raft-addr host:port
	Gossip   string   // --gossip-addr host:port (empty: a free port)
	Env      []string // added to this process's environment
	Args     []string // extra flags
	LogPath  string   // stdout and stderr go here (appended)
}

// Start starts an origin; it does not wait for it.
func Start(o Options) (*Process, error) {
	gossip := o.Gossip
	if gossip == "" {
		var err error
		if gossip, err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	args := append([]string{"origin", "--data-dir", o.DataDir, "--listen", o.Listen, "--raft-addr", o.RaftAddr, "--gossip-addr", gossip}, o.Args...)
	cmd := exec.Command(o.Bin, args...)
	cmd.Env = append(os.Environ(), o.Env...)
	logf, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = logf, logf
	p := &Process{cmd: cmd, URL: "http://" + o.Listen, logPath: o.LogPath, done: make(chan error, 1)}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// WaitHealthy polls GET /api/v1/health every 5 ms until it answers 200,
// and returns the time since the process was started.
func (p *Process) WaitHealthy(timeout time.Duration) (time.Duration, error) {
	c := &http.Client{Timeout: time.Second}
	deadline := p.Started.Add(timeout)
	for {
		resp, err := c.Get(p.URL + "/api/v1/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.Started), nil
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			return 0, fmt.Errorf("origin exited (%v); see %s", err, p.logPath)
		default:
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("origin not healthy after %v; see %s", timeout, p.logPath)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Stop ends the origin gracefully (SIGTERM), killing it after a minute.
func (p *Process) Stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return nil
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("origin did not stop within a minute; killed")
	}
}

// Kill ends the origin with SIGKILL (a crash) and waits for it.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	err := <-p.done
	p.done <- err
}

// FreeAddr returns a 127.0.0.1 address with a port free right now.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
