// The benchserver process under test: started on a free port, stopped,
// and asked for its counters.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// server is one benchserver process: its net/http and Fiber listeners.
type server struct {
	base, fiber string
	pid         int
	stop        func()
}

// startServer runs the server binary on free loopback ports, in a process
// group of its own that its stop (and every way out of benchload: proc.go)
// ends, and waits until it answers. ctx ending kills the group too.
func startServer(ctx context.Context, bin, dbURL string, pool int, env ...string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	fiberAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "ADDR="+addr, "FIBER_ADDR="+fiberAddr, fmt.Sprintf("POOL_SIZE=%d", pool))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Cancel = func() error { return signalGroup(cmd.Process.Pid, syscall.SIGKILL) }
	p, err := startProcess(cmd, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{base: "http://" + addr, fiber: "http://" + fiberAddr, pid: cmd.Process.Pid, stop: p.Stop}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if done, err := p.exited(); done {
			return nil, fmt.Errorf("%s exited before answering /_stats: %v", bin, err)
		}
		resp, err := http.Get(s.base + "/_stats")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				fmt.Fprintf(os.Stderr, "benchload: %s (pid %d) answers on %s\n", bin, cmd.Process.Pid, addr)
				return s, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.Stop()
	return nil, errors.New("server did not answer /_stats within 30s")
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// serverStats is what benchserver's /_stats reports.
type serverStats struct {
	Mallocs     uint64
	Invocations map[string]int64
	Cache       map[string]int64 // requests of the Redis engine by Outcome.Cache
	Pool        map[string]int64 // the server pool's acquires, empty acquires, their wait
}

func (b *bench) stats(srv *server) (serverStats, error) {
	var s serverStats
	resp, err := b.client.Get(srv.base + "/_stats")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&s)
	return s, err
}

func (b *bench) serverMallocs() (uint64, error) {
	s, err := b.stats(b.srv)
	return s.Mallocs, err
}
