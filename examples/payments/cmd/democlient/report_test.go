package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestReport: the summary has one line per section, ✗ for a section with a
// failed expectation; the transcripts follow only for the failed sections,
// or for all with -v.
func TestReport(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		d := &demo{verbose: verbose}
		d.title("replayed")
		d.printf("  > POST /payments (replayed)\n")
		d.expect(true, "201 again")
		d.title("refused")
		d.printf("  > POST /payments (refused)\n")
		d.expect(false, "409")
		var out bytes.Buffer
		d.report(&out, nil)
		got := out.String()
		summary, transcripts, _ := strings.Cut(got, "the service stopped gracefully")
		if !strings.Contains(summary, "  ✓ 1. replayed\n") || !strings.Contains(summary, "  ✗ 2. refused\n") || strings.Contains(summary, "> POST") {
			t.Errorf("verbose %v: summary:\n%s", verbose, summary)
		}
		if !strings.Contains(transcripts, "(refused)") || strings.Contains(transcripts, "(replayed)") != verbose {
			t.Errorf("verbose %v: transcripts:\n%s", verbose, transcripts)
		}
		if len(d.failed) != 1 {
			t.Errorf("failed: %q", d.failed)
		}
	}
}
