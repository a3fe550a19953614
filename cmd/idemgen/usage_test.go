package main

import (
	"go/parser"
	"go/token"
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
		{[]string{"generate", "-h"}, 0, "usage: idemgen generate [-check] [-client] [-client-output dir] [-config file]", "-check"},
		{[]string{"generate", "-help"}, 0, "usage: idemgen generate [-check]", "-strict"},
		{[]string{"lint", "-h"}, 0, "usage: idemgen lint [-require] [-v] SPEC", "-require"},
		{[]string{"init", "-h"}, 0, "usage: idemgen init", "-module"},
		{[]string{"migrations", "-h"}, 0, "usage: idemgen migrations -format goose|migrate|atlas|plain", "-check"},
		{[]string{"templates", "eject", "-h"}, 0, "usage: idemgen templates eject [-all] DIR [TEMPLATE...]", "-all"},
		{[]string{"conformance", "-h"}, 0, "usage: idemgen conformance -spec file -url URL [-body [ID=]FILE]", "-fixtures"},
		{[]string{"records", "get", "-h"}, 0, "usage: idemgen records get [-json] [-keys-file file]", "DATABASE_URL"},
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
		if code != tc.code || !strings.Contains(out, tc.usage) || !strings.Contains(out, tc.flag) || tc.args[0] != "records" && strings.Contains(out, "idemgen records") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and the command's own usage", tc.args, code, stdout, stderr, tc.code)
		}
	}
}

// TestUsageDocumented: the synopses the package documentation lists are
// the ones the commands print, generated from their flag sets: a flag
// added to a command changes its -h, idemgen help and, until this test
// passes, the documentation.
func TestUsageDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(f.Doc.Text(), "Usage:\n\n")
	if !ok {
		t.Fatal("main.go's documentation has no Usage block")
	}
	block, _, _ = strings.Cut(block, "\n\n")
	want := "\t" + strings.Join(usageLines(), "\n\t")
	if block != want {
		t.Errorf("main.go documents the usage\n%s\nthe commands print\n%s", block, want)
	}
	code, stdout, _ := runCmd(t, "help")
	if code != 0 || stdout != "usage:\n"+want+"\n" {
		t.Errorf("idemgen help: exit %d\n%s", code, stdout)
	}
}
