package main

import (
	"strings"
	"testing"

	"github.com/idemgen/idemgen/generator"
)

// TestBinaryVersion: the built binary says the version its generated files
// carry. Built from this checkout, Go stamps a pseudo-version into it
// (v0.0.0-<time>-<commit>), while generated headers say (devel).
func TestBinaryVersion(t *testing.T) {
	code, stdout, _ := execute(t, t.TempDir(), "version")
	if code != 0 || !strings.HasPrefix(stdout, "idemgen (devel) (") || strings.Contains(stdout, "v0.0.0") {
		t.Errorf("version: exit %d, %q; want idemgen (devel) and why", code, stdout)
	}
	if generator.Version() != "(devel)" {
		t.Errorf("the test binary's generator.Version() = %q", generator.Version())
	}
}

// TestCommandHelp: -h of a command prints that command's usage and flags
// on standard output and exits 0; a bad flag prints them after the error
// and exits 2.
func TestCommandHelp(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		code  int
		usage string // on stdout for -h, on stderr otherwise
		flag  string
	}{
		{[]string{"generate", "-h"}, 0, "usage: idemgen generate [-config idemgen.yaml]", "-check"},
		{[]string{"generate", "-help"}, 0, "usage: idemgen generate [-config idemgen.yaml]", "-strict"},
		{[]string{"lint", "-h"}, 0, "usage: idemgen lint [-require] SPEC", "-require"},
		{[]string{"init", "-h"}, 0, "usage: idemgen init", "-module"},
		{[]string{"generate", "-bogus"}, 2, "usage: idemgen generate", "-config"},
	} {
		code, stdout, stderr := runCmd(t, tc.args...)
		out := stdout
		if tc.code != 0 {
			out = stderr
			if !strings.HasPrefix(stderr, "idemgen: ") {
				t.Errorf("%q: stderr %q does not start with idemgen:", tc.args, stderr)
			}
		}
		if code != tc.code || !strings.Contains(out, tc.usage) || !strings.Contains(out, tc.flag) || strings.Contains(out, "idemgen records") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and the command's own usage", tc.args, code, stdout, stderr, tc.code)
		}
	}
}
