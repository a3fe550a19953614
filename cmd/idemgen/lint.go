package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/idemgen/idemgen/generator"
)

// lint runs `idemgen lint [-require] [-v] SPEC`: findings go to standard
// output, one per line (`idemgen: error: ...`, `idemgen: warning: ...`,
// `idemgen: note: ...`), warnings grouped by kind as generate prints them
// (every one with -v); the exit status is 1 when there is an error.
func lint(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lint", stderr)
	require := fs.Bool("require", false, "fail on x-idempotent: false on a POST or PATCH (an opt-out is a note otherwise)")
	verbose := fs.Bool("v", false, "print every warning, not a count and a few examples of each kind")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{msg: "lint takes one SPEC"}
	}
	findings, err := generator.Lint(generator.Config{Spec: fs.Arg(0), RequireIdempotent: *require})
	if err != nil {
		// A spec that does not load is an error finding like the others.
		var se *generator.SpecError
		if !errors.As(err, &se) {
			se = &generator.SpecError{Problems: []string{err.Error()}}
		}
		for _, p := range se.Problems {
			fmt.Fprintf(stdout, "idemgen: error: %s\n", p)
		}
		return errSilent
	}
	failed := false
	var warnings []generator.Warning
	for _, f := range findings {
		switch f.Severity {
		case generator.SeverityWarning:
			warnings = append(warnings, generator.Warning{Message: f.Message, Kind: f.Kind})
			continue
		case generator.SeverityNote:
			for _, line := range generator.WarningLines(warnings, *verbose) {
				fmt.Fprintf(stdout, "idemgen: %s\n", line)
			}
			warnings = nil
		}
		fmt.Fprintf(stdout, "idemgen: %s\n", f)
		failed = failed || f.Severity == generator.SeverityError
	}
	for _, line := range generator.WarningLines(warnings, *verbose) {
		fmt.Fprintf(stdout, "idemgen: %s\n", line)
	}
	if failed {
		return errSilent
	}
	return nil
}
