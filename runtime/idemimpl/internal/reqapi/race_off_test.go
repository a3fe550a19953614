//go:build !race

package reqapi

const raceEnabled = false
