package main

import (
	"strings"
	"testing"
)

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
		{[]string{"lint", "-h"}, 0, "usage: idemgen lint [-require] [-v] SPEC", "-require"},
		{[]string{"init", "-h"}, 0, "usage: idemgen init", "-module"},
		{[]string{"migrations", "-h"}, 0, "usage: idemgen migrations -format goose|migrate|atlas|plain", "-check"},
		{[]string{"templates", "eject", "-h"}, 0, "usage: idemgen templates eject [-all] DIR [TEMPLATE...]", "-all"},
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
