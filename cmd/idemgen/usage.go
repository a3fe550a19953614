package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// commandArgs are what each command takes after its flags, by flag set
// name; a command not listed takes nothing.
var commandArgs = map[string]string{
	"lint":            "SPEC",
	"vet":             "[packages]",
	"templates eject": "DIR [TEMPLATE...]",
	"records get":     "KEY",
	"records resolve": "KEY",
}

// commandDocs are what a command's usage says after its synopsis, by flag
// set name ("records" for every records subcommand).
var commandDocs = map[string]string{
	"conformance": conformanceDoc,
	"records":     recordsDoc,
}

// commandNames are idemgen's commands as the general usage lists them.
var commandNames = []string{"generate", "lint", "init", "migrations", "conformance", "vet", "templates eject", "records", "version"}

// synopsis is a command's one line of usage, generated from its flag set,
// so that the general usage, the command's -h and the package
// documentation say the same: the required flags (their usage says
// "required"), then the others in brackets, by name, each with the
// placeholder of its value (the usage's `quoted` word, else its type), then
// what the command takes after them.
func synopsis(fs *flag.FlagSet) string {
	var required, optional []string
	fs.VisitAll(func(f *flag.Flag) {
		s := "-" + f.Name
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			name, _ := flag.UnquoteUsage(f)
			s += " " + name
		}
		if strings.Contains(f.Usage, "(required") || strings.HasSuffix(f.Usage, "; required") {
			required = append(required, s)
		} else {
			optional = append(optional, "["+s+"]")
		}
	})
	parts := append([]string{"idemgen", fs.Name()}, required...)
	parts = append(parts, optional...)
	if args := commandArgs[fs.Name()]; args != "" {
		parts = append(parts, args)
	}
	return strings.Join(parts, " ")
}

// commandFlags is the flag set of command name, as the command defines it: the
// command run with -h, which returns it before doing anything.
func commandFlags(name string) *flag.FlagSet {
	var hr helpRequest
	if err := dispatch(append(strings.Fields(name), "-h"), io.Discard, io.Discard); !errors.As(err, &hr) {
		panic(fmt.Sprintf("idemgen %s -h: %v, not its flag set", name, err))
	}
	return hr.fs
}

// commandUsage is the usage of one command: its synopsis, what it does
// when there is more to say, and its flags.
func commandUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n", synopsis(fs))
	if doc := commandDocs[strings.Fields(fs.Name())[0]]; doc != "" {
		b.WriteString("\n" + doc + "\n")
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		b.WriteString("flags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return b.String()
}

// usage is the general usage: every command's synopsis (the records
// subcommands' in one line; idemgen records help lists theirs).
func usage() string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, line := range usageLines() {
		b.WriteString("\t" + line + "\n")
	}
	return b.String()
}

func usageLines() []string {
	var lines []string
	for _, name := range commandNames {
		switch name {
		case "records":
			lines = append(lines, "idemgen records "+strings.Join(recordsNames(), "|")+" ...   (idemgen records help)")
		case "version":
			lines = append(lines, "idemgen version")
		default:
			lines = append(lines, synopsis(commandFlags(name)))
		}
	}
	return lines
}
