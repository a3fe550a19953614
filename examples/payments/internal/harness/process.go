// Package harness runs the payments service as a real process and talks to
// it over HTTP. The demo client and the end-to-end tests share it.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ServicePackage is the import path of the service binary.
const ServicePackage = "github.com/idemgen/idemgen/examples/payments/cmd/payments"

// ShopPackage is the import path of the shop's binary, the service that
// calls the payments service (examples/payments/shop).
const ShopPackage = "github.com/idemgen/idemgen/examples/payments/cmd/shop"

// Build compiles the service binary into dir and returns its path. It runs
// `go build` from the current directory, which must be inside the example
// module. race adds -race.
func Build(ctx context.Context, dir string, race bool) (string, error) {
	return BuildPackage(ctx, dir, ServicePackage, race)
}

// BuildPackage is Build of the binary of the package pkg of the example
// module (ServicePackage, ShopPackage).
func BuildPackage(ctx context.Context, dir, pkg string, race bool) (string, error) {
	bin := filepath.Join(dir, path.Base(pkg))
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// FreeAddr returns a loopback address nobody listens on right now.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Process is one run of the service binary.
type Process struct {
	Addr string // host:port it listens on
	URL  string // http://Addr

	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
	err  error
}

// Start runs bin listening on addr with env added to the current
// environment, and waits until GET /healthz answers 200 (or ctx ends).
func Start(ctx context.Context, bin, addr string, env ...string) (*Process, error) {
	p := &Process{Addr: addr, URL: "http://" + addr, logs: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin)
	p.cmd.Env = append(append(os.Environ(), env...), "ADDR="+addr)
	p.cmd.Stdout = p.logs
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(ctx); err != nil {
		p.Kill()
		return nil, fmt.Errorf("service did not become ready: %w\n%s", err, p.Logs())
	}
	return p, nil
}

func (p *Process) waitReady(ctx context.Context) error {
	hc := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-p.done:
			return fmt.Errorf("exited: %v", p.err)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/healthz", nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL (kill -9) and waits for the process to go.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM and waits up to timeout for a graceful exit, then
// kills. It returns the exit error of a process that did not exit cleanly.
func (p *Process) Stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return errors.New("did not stop within " + timeout.String() + " of SIGTERM; killed")
	}
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Logs returns what the process wrote so far.
func (p *Process) Logs() string { return p.logs.String() }

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
