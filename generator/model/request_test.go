package model

import "testing"

// TestUUIDKeys: the UUID key formats are told from the others by the
// runtime's parser, with the samples each accepts; a format the runtime
// does not know is neither.
func TestUUIDKeys(t *testing.T) {
	for f, want := range map[string]int{"uuid": 3, "uuidv4": 1, "uuidv7": 1, "opaque": -1, "printable": -1, "uuidv9": 0} {
		samples, uuidOnly := uuidKeys(f)
		if uuidOnly != (want > 0) || want > 0 && len(samples) != want {
			t.Errorf("%s: samples %q, UUIDs only %v; want %d samples", f, samples, uuidOnly, want)
		}
	}
}
