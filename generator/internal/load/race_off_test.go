//go:build !race

package load

// raceEnabled: built with -race (see TestSplitLoadsAlike).
const raceEnabled = false
