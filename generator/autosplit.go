package generator

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
)

// SplitAbove is the number of a spec's operations above which its types
// are split into packages of their own when the config leaves Split out.
// On format_gen's description (1 072 operations, all idempotent) the split
// compiles in 7% less CPU than one package and a third less peak memory;
// cut to 500 operations, 10% less CPU and a third less memory; cut to 300
// or 150, the same CPU and a quarter or a tenth less memory, which no
// longer pays for the split's other costs (docs/generate.md; BENCHMARKS.md,
// "Generating and compiling code").
const SplitAbove = 500

// decideSplit sets cfg.split for the spec doc: Split when the config
// says, otherwise whether doc has more than SplitAbove operations. A split
// it decides needs the import path of Output, from go.mod when ImportPath
// is empty; when there is none, the error names both ways out.
func (cfg *Config) decideSplit(doc *openapi3.T) error {
	if cfg.Split != nil {
		cfg.split = *cfg.Split
		return nil
	}
	n := countOperations(doc)
	if n <= SplitAbove {
		cfg.split = false
		return nil
	}
	if cfg.ImportPath == "" {
		p, err := importPath(cfg.Output)
		if err != nil {
			where, set := "config", "set importPath, or split: false to keep one package, in an idemgen.yaml"
			if cfg.file != "" {
				where, set = cfg.file, "set importPath, or split: false to keep one package"
			}
			return fmt.Errorf("%s: split: %s has %d operations, more than %d, so its types are split into packages of their own, which needs the import path of the output: %w (%s)",
				where, specName(cfg), n, SplitAbove, err, set)
		}
		cfg.ImportPath = p
	}
	cfg.split = true
	return nil
}

// countOperations is the number of doc's path operations.
func countOperations(doc *openapi3.T) int {
	n := 0
	if doc.Paths != nil {
		for _, item := range doc.Paths.Map() {
			n += len(item.Operations())
		}
	}
	return n
}
