package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteText writes one line per check, `PASS  createPayment  replay  evidence`,
// then the summary line.
func (r *Report) WriteText(w io.Writer) error {
	opWidth, checkWidth := 0, 0
	for _, res := range r.Results {
		opWidth = max(opWidth, len(res.Operation))
		checkWidth = max(checkWidth, len(res.Check))
	}
	for _, res := range r.Results {
		if _, err := fmt.Fprintf(w, "%-4s  %-*s  %-*s  %s\n", res.Outcome, opWidth, res.Operation, checkWidth, res.Check, oneLine(res.Evidence)); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, r.Summary())
	return err
}

// Summary is the last line of the text report.
func (r *Report) Summary() string {
	ops := map[string]bool{}
	for _, res := range r.Results {
		ops[res.Operation] = true
	}
	verdict := "conforms"
	if !r.OK() {
		verdict = "DOES NOT CONFORM"
	}
	return fmt.Sprintf("%s: %s; %d checks on %s: %d passed, %d failed, %d skipped",
		r.URL, verdict, len(r.Results), plural(len(ops), "operation"), r.Passed, r.Failed, r.Skipped)
}

// WriteJSON writes the report, exchanges included, as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
