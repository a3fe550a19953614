//go:build race

package reqapi

// raceEnabled: the race detector changes what is allocated (and sync.Pool
// drops what it is given at random), so allocation is not measured under it.
const raceEnabled = true
