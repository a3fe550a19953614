package e2e

import (
	"context"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// What TestFailover logs when a phase's clients are still running after
// 45 s: the primary's activity and lock waits, PgBouncer's pools, the last
// lines of the cluster's and the instances' logs.

// bouncerAdminURL is DEBUG_BOUNCER_ADMIN, else the admin console (database
// pgbouncer) of the PgBouncer at url.
func bouncerAdminURL(url string) string {
	if u := os.Getenv("DEBUG_BOUNCER_ADMIN"); u != "" {
		return u
	}
	u, err := neturl.Parse(url)
	if err != nil {
		return ""
	}
	u.Path = "/pgbouncer"
	return u.String()
}

// dumpLeader logs what the primary's client backends are doing and waiting
// for, the lock waits, and the synchronous standby it waits for.
func (l *haLoad) dumpLeader(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, q := range []string{
		`SELECT current_setting('synchronous_standby_names'), (SELECT string_agg(application_name||':'||sync_state, ',') FROM pg_stat_replication)`,
		`SELECT state, coalesce(wait_event_type||':'||wait_event, ''), count(*), round(max(extract(epoch FROM now()-xact_start))::numeric, 1),
			min(left(regexp_replace(query, '\s+', ' ', 'g'), 60))
			FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1, 2 ORDER BY 3 DESC`,
		`SELECT pid, locktype, mode, relation::regclass::text, pg_blocking_pids(pid)::text FROM pg_locks WHERE NOT granted`,
	} {
		rows, err := l.services[0].pool.Query(ctx, q)
		if err != nil {
			l.t.Logf("leader: %v", err)
			continue
		}
		vals, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		l.t.Logf("leader: %d rows: %v %v", len(vals), vals, err)
	}
}

// tailFile returns the last n lines of the file at path, or why it cannot.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
