package main

import (
	"runtime/debug"
	"testing"
)

// TestVersion: a release prints its version; a build from a checkout
// prints (devel) with the commit, its time and whether the tree was
// modified, when the go command recorded them, and says it has none
// otherwise.
func TestVersion(t *testing.T) {
	vcs := func(modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "aee1426b6f0c9a8d7e5f4c3b2a1908f7e6d5c4b3"},
			{Key: "vcs.time", Value: "2026-12-07T04:00:00Z"},
			{Key: "vcs.modified", Value: modified},
		}}
	}
	for _, c := range []struct {
		v    string
		bi   *debug.BuildInfo
		want string
	}{
		{"v0.1.0", vcs("true"), "v0.1.0"},
		{"(devel)", vcs("false"), "(devel) (commit aee1426b6f0c of 2026-12-07T04:00:00Z; generated files say (devel))"},
		{"(devel)", vcs("true"), "(devel) (commit aee1426b6f0c of 2026-12-07T04:00:00Z, with uncommitted changes; generated files say (devel))"},
		{"(devel)", &debug.BuildInfo{}, "(devel) (built from a checkout or through a replace directive, without version control information; generated files say (devel))"},
		{"(devel)", nil, "(devel) (built from a checkout or through a replace directive, without version control information; generated files say (devel))"},
	} {
		if got := versionOf(c.v, c.bi); got != c.want {
			t.Errorf("versionOf(%q, %v):\n got %q\nwant %q", c.v, c.bi, got, c.want)
		}
	}
}
