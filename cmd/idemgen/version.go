package main

import (
	"runtime/debug"
	"strings"

	"github.com/idemgen/idemgen/generator"
)

// version is what `idemgen version` prints.
func version() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(generator.Version(), bi)
}

// versionOf is what `idemgen version` prints for a binary whose generated
// files say v (generator.Version) and whose build information is bi: v
// itself for a release, and for a build from a checkout or through a
// replace directive, where the module version Go reports
// (v0.0.0-00010101000000-000000000000 or a pseudo-version) would say
// otherwise, (devel) with the commit it was built from, when the go
// command recorded it (-buildvcs, the default in a git checkout).
func versionOf(v string, bi *debug.BuildInfo) string {
	if v != "(devel)" {
		return v
	}
	var rev, at, modified string
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	if rev == "" {
		return v + " (built from a checkout or through a replace directive, without version control information; generated files say (devel))"
	}
	var b strings.Builder
	b.WriteString(v + " (commit " + rev[:min(len(rev), 12)])
	if at != "" {
		b.WriteString(" of " + at)
	}
	if modified == "true" {
		b.WriteString(", with uncommitted changes")
	}
	b.WriteString("; generated files say (devel))")
	return b.String()
}
