package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CPU time per request, by process: the server's, the database's (every
// process of its cluster) and the client's (benchload, or pgbench for the
// floors). Unlike requests per second it hardly moves with what else the
// machine runs, so the variants can be compared on a busy machine too: on
// a quiet one whose two cores the benchmark saturates, throughput follows
// the sum. Read from /proc (Linux; zeros elsewhere).

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

type cpuTimes struct{ server, db, client time.Duration }

func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	return cpuTimes{c.server - o.server, c.db - o.db, c.client - o.client}
}

// procStat returns the fields of /proc/pid/stat after the command name
// (the first is field 3, the state), or nil.
func procStat(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

// procCPU is the user and system time pid has used (fields 14 and 15).
func procCPU(pid string) time.Duration {
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * clockTick
}

// postmaster finds the database cluster's first process: the parent of the
// backend serving a connection to db ("" when /proc does not show it).
func postmaster(ctx context.Context, db string) (string, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var pid int32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return "", err
	}
	if f := procStat(strconv.Itoa(int(pid))); len(f) > 1 {
		return f[1], nil // field 4, the parent
	}
	return "", nil
}

// clusterCPU sums the CPU time of the postmaster pm and its children, those
// that have ended included (fields 16 and 17 of the postmaster: the
// children it has waited for).
func clusterCPU(pm string) time.Duration {
	if pm == "" {
		return 0
	}
	f := procStat(pm)
	if len(f) < 15 {
		return 0
	}
	total := procCPU(pm)
	cu, _ := strconv.ParseInt(f[13], 10, 64)
	cs, _ := strconv.ParseInt(f[14], 10, 64)
	total += time.Duration(cu+cs) * clockTick
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		if f := procStat(e.Name()); len(f) > 12 && f[1] == pm {
			total += procCPU(e.Name())
		}
	}
	return total
}

// cpuNow reads the CPU times of srv's process, the database cluster and
// benchload itself.
func (b *bench) cpuNow(srv *server) cpuTimes {
	return cpuTimes{server: procCPU(strconv.Itoa(srv.pid)), db: clusterCPU(b.postmaster), client: procCPU("self")}
}

// cpuPerReq formats a run's CPU time per request in µs: server + database +
// client = total.
func cpuPerReq(runs []run) string {
	var s, d, c []float64
	for _, r := range runs {
		if r.n == 0 {
			continue
		}
		n := float64(r.n)
		s = append(s, float64(r.cpu.server.Microseconds())/n)
		d = append(d, float64(r.cpu.db.Microseconds())/n)
		c = append(c, float64(r.cpu.client.Microseconds())/n)
	}
	if len(s) == 0 {
		return ""
	}
	ms, md, mc := median(s), median(d), median(c)
	return fmt.Sprintf("%.0f + %.0f + %.0f = %.0f", ms, md, mc, ms+md+mc)
}
