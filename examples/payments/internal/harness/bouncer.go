package harness

import (
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BouncerStatementGrace is how long a statement whose context ended may
// still run on a connection through PgBouncer before pgx gives the
// connection up: longer than PgBouncer's query_wait_timeout in
// scripts/ha.sh (5 s), so PgBouncer, not the client, decides about a
// statement still queued for a server.
const BouncerStatementGrace = 10 * time.Second

// BouncerConfig configures a pool that reaches PostgreSQL through PgBouncer
// in transaction mode so that a request that gives up does not take a
// server connection with it.
//
// pgx's default, when a statement's context ends, is to break the
// connection at once and close it. Through PgBouncer that costs far more
// than one connection: PgBouncer closes the server connection the client
// was using mid-statement ("client disconnect while server was not ready")
// and logs in a new one, one login at a time, while cancel requests of
// clients still queued for a server are dropped. After a failover every
// request waits for a server; clients time out, each closed connection
// kills the server connection PgBouncer had just logged in for it, and the
// pool never refills: TestFailover saw no success through PgBouncer for
// 82 s after a kill -9 (11-14 s through the multi-host DSN) until this.
// Here a statement whose context ended keeps its connection for
// BouncerStatementGrace: it completes (the engine then rolls back on a
// context of its own), and the server connection goes back to PgBouncer's
// pool for the next client.
func BouncerConfig(cfg *pgxpool.Config) {
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn(), DeadlineDelay: BouncerStatementGrace}
	}
}
