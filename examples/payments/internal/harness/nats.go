package harness

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartNATS runs a real nats-server with JetStream in this process, on a
// free loopback port, storing its streams under dir. Shut it down with
// Shutdown (and WaitForShutdown).
func StartNATS(dir string) (*server.Server, error) {
	s, err := server.NewServer(&server.Options{
		ServerName: "payments-nats", Host: "127.0.0.1", Port: -1,
		JetStream: true, StoreDir: filepath.Join(dir, "nats"),
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		return nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, errors.New("nats-server was not ready within 30s")
	}
	return s, nil
}
