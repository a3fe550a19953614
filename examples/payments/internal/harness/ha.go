package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// HA is a Patroni cluster on loopback started by the repository's
// scripts/ha.sh: three PostgreSQL nodes (a leader, a synchronous standby,
// a standby) with etcd, HAProxy routing to the primary and PgBouncer in
// transaction mode in front of HAProxy.
type HA struct {
	Dir        string
	URL        string // every node, target_session_attrs=read-write
	ProxyURL   string // HAProxy
	BouncerURL string // PgBouncer (transaction pooling) -> HAProxy
	script     string
	borrowed   bool // started by someone else, who stops it
}

// haScript is scripts/ha.sh of the repository this file is in.
func haScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "scripts", "ha.sh")
}

// StartHA starts a cluster whose files live in dir (created). It installs
// what it lacks from Debian's packages and must run as root or postgres.
func StartHA(ctx context.Context, dir string) (*HA, error) {
	h := &HA{Dir: dir, script: haScript()}
	out, err := h.run(ctx, "start", dir)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		for _, kv := range strings.Fields(strings.TrimPrefix(sc.Text(), "export ")) {
			name, val, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			val = strings.Trim(val, "'")
			switch name {
			case "HA_DATABASE_URL":
				h.URL = val
			case "HA_PROXY_URL":
				h.ProxyURL = val
			case "HA_BOUNCER_URL":
				h.BouncerURL = val
			}
		}
	}
	if h.URL == "" || h.ProxyURL == "" || h.BouncerURL == "" {
		_ = h.Stop(context.Background())
		return nil, fmt.Errorf("ha.sh start printed no connection strings: %q", out)
	}
	return h, nil
}

// HAFromEnv returns the cluster `scripts/ha.sh run` started (HA_DIR and
// friends), or nil when there is none. Its Stop does nothing: the script
// stops it.
func HAFromEnv() *HA {
	h := &HA{Dir: os.Getenv("HA_DIR"), URL: os.Getenv("HA_DATABASE_URL"), ProxyURL: os.Getenv("HA_PROXY_URL"),
		BouncerURL: os.Getenv("HA_BOUNCER_URL"), script: haScript(), borrowed: true}
	if h.Dir == "" || h.URL == "" || h.ProxyURL == "" || h.BouncerURL == "" {
		return nil
	}
	return h
}

func (h *HA) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.script, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("ha.sh %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// Stop stops every process of the cluster and deletes its files.
func (h *HA) Stop(ctx context.Context) error {
	if h.borrowed {
		return nil
	}
	_, err := h.run(ctx, "stop", h.Dir)
	return err
}

// Kill kills node ("leader", "sync" or a name) with SIGKILL, Patroni and
// PostgreSQL both, and returns its name.
func (h *HA) Kill(ctx context.Context, node string) (string, error) {
	return h.run(ctx, "kill", h.Dir, node)
}

// Rejoin starts a killed node's Patroni again.
func (h *HA) Rejoin(ctx context.Context, node string) error {
	_, err := h.run(ctx, "rejoin", h.Dir, node)
	return err
}

// Switchover hands the leadership to the synchronous standby and returns
// the new leader.
func (h *HA) Switchover(ctx context.Context) (string, error) { return h.run(ctx, "switchover", h.Dir) }

// Leader returns the leader's name, waiting for one.
func (h *HA) Leader(ctx context.Context) (string, error) { return h.run(ctx, "leader", h.Dir) }

// Sync returns the synchronous standby's name, waiting for one.
func (h *HA) Sync(ctx context.Context) (string, error) { return h.run(ctx, "sync", h.Dir) }

// Status is one line per node: name, role, state, lag.
func (h *HA) Status(ctx context.Context) (string, error) { return h.run(ctx, "status", h.Dir) }

// ReadOnly makes the leader take no writes for d
// (default_transaction_read_only, through ALTER SYSTEM and a reload): what
// a node restarted in place as a standby, or the old primary before it
// steps down, answers for a moment, made deterministic. Every write then
// fails with SQLSTATE 25006, and a connection that asks for a read-write
// server finds none. It returns when the leader turned read-only; done
// reports turning it back, d later.
func (h *HA) ReadOnly(ctx context.Context, d time.Duration) (struck time.Time, done <-chan error, err error) {
	conn, err := pgx.Connect(ctx, h.URL) // the leader, while it still takes writes
	if err != nil {
		return time.Now(), nil, err
	}
	set := func(ctx context.Context, v string) error {
		if _, err := conn.Exec(ctx, "ALTER SYSTEM SET default_transaction_read_only = "+v); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, "SELECT pg_reload_conf()")
		return err
	}
	if err := set(ctx, "on"); err != nil {
		conn.Close(ctx)
		return time.Now(), nil, err
	}
	struck = time.Now()
	ch := make(chan error, 1)
	go func() {
		time.Sleep(d)
		ctx := context.WithoutCancel(ctx)
		err := set(ctx, "off")
		conn.Close(ctx)
		ch <- err
	}()
	return struck, ch, nil
}
