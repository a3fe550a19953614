// Command mkstarter writes starter.txtar, the files `idemgen init` writes,
// from examples/minimal: the example is the starter, kept compiling and
// tested where it lives, and `make check-generated` fails when the two
// differ. Run by go generate in cmd/idemgen.
package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// files are the starter's files, relative to examples/minimal; api/ is left
// out, since `idemgen init` generates it.
var files = []string{"openapi.yaml", "idemgen.yaml", "main.go", "service.go", "main_test.go"}

func main() {
	if err := run("../../examples/minimal", "starter.txtar"); err != nil {
		fmt.Fprintln(os.Stderr, "mkstarter:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	names := append([]string(nil), files...)
	migrations, err := fs.Glob(os.DirFS(src), "migrations/*.sql")
	if err != nil {
		return err
	}
	names = append(names, migrations...)
	var b bytes.Buffer
	b.WriteString("The files `idemgen init` writes, copied from examples/minimal by\ninternal/mkstarter (go generate): edit the example, not this file.\n")
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if !bytes.HasSuffix(data, []byte("\n")) {
			return fmt.Errorf("%s: does not end in a newline", name)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
				return fmt.Errorf("%s: a line looks like a file marker: %q", name, line)
			}
		}
		fmt.Fprintf(&b, "-- %s --\n", name)
		b.Write(data)
	}
	if old, err := os.ReadFile(out); err == nil && bytes.Equal(old, b.Bytes()) {
		return nil
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}
