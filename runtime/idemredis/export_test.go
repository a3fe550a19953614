package idemredis

import "time"

// SetWarnEvery sets the least time between two of c's warnings that Redis
// fails, before c is used.
func SetWarnEvery(c *Cache, d time.Duration) { c.health.every = d }
