package generator

import "runtime/debug"

// Module is idemgen's module path.
const Module = "github.com/idemgen/idemgen"

// Version is the idemgen version for generated file headers: the module's
// version when this binary was built from a downloaded module (go install
// ...@v1.2.0, go tool with idemgen as a dependency), "(devel)" when it was
// built from a checkout or a replace directive (whose version would change
// with every commit, and every generated file with it).
func Version() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	if bi == nil {
		return "(devel)"
	}
	mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
	for _, m := range mods {
		if m.Path == Module {
			if m.Replace != nil || m.Sum == "" || m.Version == "" {
				return "(devel)"
			}
			return m.Version
		}
	}
	return "(devel)"
}
