// Command apicheck compares the exported API of runtime/... with the last
// release's and fails on an incompatible change that CHANGELOG.md does not
// list.
//
//	apicheck [-race] [-root DIR]            compare with the newest api/*.zip
//	apicheck -write api/v0.2.0.zip [-root DIR]   record the API of a release
//
// The record of a release (api/vX.Y.Z.zip) is what golang.org/x/exp's
// apidiff writes with -m -w: per package, the compiler's export data, which
// carries every type the API refers to and so needs none of the
// dependencies to be read back. The comparison is apidiff's. Every
// incompatible change (a name removed, a type or signature changed, a
// method added to an interface) must name its identifier in the
// "## [Unreleased]" section of CHANGELOG.md, under "### Removed" or
// "### Changed", as `idem.Name`, `idem.Type.Field` or `idem.Type.Method`
// (a removed package: its path from runtime/ on, `runtime/idemx`).
//
// -race loads the packages with the race detector's build flags, so that
// make test reuses the export data its race-deps step compiled.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	var (
		root  = flag.String("root", ".", "the repository")
		write = flag.String("write", "", "write the API of runtime/... to this file (a release's record) instead of checking")
		race  = flag.Bool("race", false, "load the packages built with -race")
	)
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: apicheck [-root DIR] [-race] [-write api/vX.Y.Z.zip]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	var flags []string
	if *race {
		flags = []string{"-race"}
	}
	if *write != "" {
		if err := writeRelease(*root, *write, flags); err != nil {
			fmt.Fprintln(os.Stderr, "apicheck:", err)
			os.Exit(1)
		}
		return
	}
	log, err := os.ReadFile(filepath.Join(*root, "CHANGELOG.md"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(1)
	}
	res, err := check(*root, log, runtimeAPI, flags, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(1)
	}
	fmt.Print(res.String())
	if len(res.Unlisted) > 0 {
		os.Exit(1)
	}
}
