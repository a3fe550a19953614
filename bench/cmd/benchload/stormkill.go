package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"time"
)

// stormRedisKilled runs the Redis storm on two server processes that share
// a Redis of their own (started with scripts/redis.sh, whose path is sh),
// and kills that Redis with kill -9 a few milliseconds after the requests
// of the middle key are released: the keys before it are served with the
// cache, the middle one loses it mid-flight, the rest run without it.
func (b *bench) stormRedisKilled(sh string, keys, size int) (stormResult, error) {
	tg := stormTarget{name: "idemgen-redis, Redis killed mid-storm", path: "/redis/atomic", counter: "atomic", idemgen: true}
	dir, err := os.MkdirTemp("", "benchload-redis-")
	if err != nil {
		return stormResult{target: tg}, err
	}
	out, err := exec.Command(sh, "start", dir).Output()
	if err != nil {
		return stormResult{target: tg}, fmt.Errorf("%s start: %w", sh, err)
	}
	m := regexp.MustCompile(`REDIS_URL='([^']+)'`).FindSubmatch(out)
	if m == nil {
		return stormResult{target: tg}, fmt.Errorf("%s start printed no REDIS_URL: %q", sh, out)
	}
	// Stopped however benchload ends (proc.go), not only on return.
	stopRedis := atExit(func() { _ = exec.Command(sh, "stop", dir).Run() })
	defer stopRedis()
	var srvs []*server
	defer func() {
		for _, s := range srvs {
			s.stop()
		}
	}()
	for range 2 {
		s, err := b.start("REDIS_URL=" + string(m[1]))
		if err != nil {
			return stormResult{target: tg}, err
		}
		srvs = append(srvs, s)
	}
	var killErr error
	res, err := b.stormOn(tg, srvs, keys, size, 1, func(k int) {
		if k == keys/2 {
			time.Sleep(3 * time.Millisecond)
			if out, err := exec.Command(sh, "kill", dir).CombinedOutput(); err != nil {
				killErr = fmt.Errorf("%s kill: %w: %s", sh, err, out)
			}
		}
	})
	if err == nil {
		err = killErr
	}
	return res, err
}
