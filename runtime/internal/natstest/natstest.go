// Package natstest runs NATS servers with JetStream inside a test process:
// one server, or a three-node cluster on 127.0.0.1, with their stores in the
// test's temporary directory. No mock: these are real nats-server instances.
package natstest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server starts one JetStream server, shut down when the test ends.
func Server(tb testing.TB) *server.Server {
	tb.Helper()
	s := start(tb, &server.Options{
		ServerName: "solo",
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   filepath.Join(tb.TempDir(), "solo"),
		NoLog:      true,
		NoSigs:     true,
	})
	return s
}

// Cluster starts a three-node JetStream cluster whose nodes route to each
// other on free 127.0.0.1 ports. It returns once the cluster has elected its
// meta leader. The nodes are shut down when the test ends (Shutdown is
// idempotent, so a test may stop one earlier).
func Cluster(tb testing.TB) []*server.Server {
	tb.Helper()
	const n = 3
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range ports {
		ports[i] = freePort(tb)
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i])
	}
	dir := tb.TempDir()
	servers := make([]*server.Server, n)
	for i := range servers {
		name := fmt.Sprintf("n%d", i+1)
		servers[i] = start(tb, &server.Options{
			ServerName: name,
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   filepath.Join(dir, name),
			Cluster: server.ClusterOpts{
				Name: "idemgen",
				Host: "127.0.0.1",
				Port: ports[i],
			},
			Routes: server.RoutesFromStr(strings.Join(routes, ",")),
			NoLog:  true,
			NoSigs: true,
		})
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		leader := false
		for _, s := range servers {
			if s.JetStreamIsLeader() {
				leader = true
			}
		}
		if leader {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatal("natstest: the cluster elected no JetStream meta leader within 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return servers
}

func start(tb testing.TB, opts *server.Options) *server.Server {
	tb.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		tb.Fatalf("natstest: %v", err)
	}
	go s.Start()
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if !s.ReadyForConnections(30 * time.Second) {
		tb.Fatalf("natstest: server %s not ready within 30s", opts.ServerName)
	}
	return s
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("natstest: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// URLs joins the client URLs of servers, for nats.Connect.
func URLs(servers ...*server.Server) string {
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}

// Connect connects to servers (any of them, reconnecting to the others) and
// returns a JetStream context; the connection is closed when the test ends.
func Connect(tb testing.TB, servers ...*server.Server) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc, err := nats.Connect(URLs(servers...),
		nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.ReconnectJitter(0, 0))
	if err != nil {
		tb.Fatalf("natstest: connect: %v", err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}

// Stream creates (or updates) a stream, retrying until the deadline while a
// cluster is still settling.
func Stream(tb testing.TB, js jetstream.JetStream, cfg jetstream.StreamConfig) jetstream.Stream {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		s, err := js.CreateOrUpdateStream(ctx, cfg)
		if err == nil {
			return s
		}
		if ctx.Err() != nil {
			tb.Fatalf("natstest: create stream %s: %v", cfg.Name, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Eventually calls cond until it returns nil or timeout passes, then fails
// the test with cond's last error.
func Eventually(tb testing.TB, timeout time.Duration, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
