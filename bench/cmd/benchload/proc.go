package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// benchload starts servers (benchserver, a Redis of a storm's own) and must
// never leave one behind: a server left running keeps its database busy and
// holds benchload's stdout and stderr open, so a caller reading them through
// a pipe waits forever. Every way out of benchload therefore goes through
// cleanups: main's deferred runCleanups on return (and on a panic of the
// main goroutine), fatalf, and SIGINT, SIGTERM or SIGHUP (catchSignals).
// A benchserver also runs in a process group of its own, which stop kills
// as a whole (the server's children with it), and on Linux it gets SIGKILL
// from the kernel when benchload dies without running any of that (kill -9,
// a panic in another goroutine): SysProcAttr.Pdeathsig (proc_linux.go).
var cleanups struct {
	sync.Mutex
	next    int
	fns     map[int]func()
	exiting bool
}

// atExit registers f to run when benchload ends; the returned func runs f
// now (once) and unregisters it. When benchload is already ending, f runs
// at once.
func atExit(f func()) (runNow func()) {
	var once sync.Once
	run := func() { once.Do(f) }
	cleanups.Lock()
	if cleanups.exiting {
		cleanups.Unlock()
		run()
		return run
	}
	if cleanups.fns == nil {
		cleanups.fns = map[int]func(){}
	}
	id := cleanups.next
	cleanups.next++
	cleanups.fns[id] = run
	cleanups.Unlock()
	return func() {
		run()
		cleanups.Lock()
		delete(cleanups.fns, id)
		cleanups.Unlock()
	}
}

// runCleanups runs every registered cleanup (concurrently: each server's
// stop may wait for it to shut down) and waits for them all.
func runCleanups() {
	cleanups.Lock()
	cleanups.exiting = true
	fns := cleanups.fns
	cleanups.fns = nil
	cleanups.Unlock()
	var wg sync.WaitGroup
	for _, f := range fns {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
}

var exitOnce sync.Once

// exit runs the cleanups and ends benchload with code. A second caller
// (fatalf while a signal is being handled) blocks until the first exits.
func exit(code int) {
	exitOnce.Do(func() {
		runCleanups()
		os.Exit(code)
	})
}

// catchSignals ends benchload on SIGINT, SIGTERM and SIGHUP after stopping
// what it started, with the shell's status for the signal (128+n).
func catchSignals() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-c
		fmt.Fprintf(os.Stderr, "benchload: %v: stopping the servers it started\n", s)
		code := 1
		if n, ok := s.(syscall.Signal); ok {
			code = 128 + int(n)
		}
		exit(code)
	}()
}

// process is a child process in a process group of its own.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd.Wait returned
	err  error         // cmd.Wait's error, once done is closed
	// Stop stops the process and its group and waits for the process; safe
	// to call more than once and from several goroutines.
	Stop func()
}

// startProcess starts cmd as the leader of a new process group and
// registers its stop with atExit: SIGTERM to the group, up to grace for the
// process to exit, then SIGKILL to whatever is left of the group (children
// the process left, or the process itself), and the wait for it.
func startProcess(cmd *exec.Cmd, grace time.Duration) (*process, error) {
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	pgid := cmd.Process.Pid
	p.Stop = atExit(func() {
		_ = signalGroup(pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
		// The group outlives its leader while a member is left; its id is
		// not reused until then.
		if err := signalGroup(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			fmt.Fprintf(os.Stderr, "benchload: kill process group %d: %v\n", pgid, err)
		}
		<-p.done
	})
	return p, nil
}

// exited reports whether the process has exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}
