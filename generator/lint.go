package generator

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Lint checks a spec for what `idemgen lint` gates on: every POST and PATCH
// must be idempotent, and every x-idempotent value must be valid (as must
// anything else generation would refuse). It returns the findings, sorted;
// err is only for a spec that cannot be loaded at all.
func Lint(cfg Config) ([]string, error) {
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	doc, err := loadSpec(&cfg)
	if err != nil {
		return nil, err
	}
	file := specName(&cfg)
	var findings []string
	if _, err := buildModel(doc, &cfg, ""); err != nil {
		var se *SpecError
		if !errors.As(err, &se) {
			return nil, err
		}
		findings = append(findings, se.Problems...)
	}
	_, hasRoot := doc.Extensions["x-idempotent"]
	for _, path := range doc.Paths.InMatchingOrder() {
		ops := doc.Paths.Value(path).Operations()
		for _, method := range sortedKeys(ops) {
			m := strings.ToUpper(method)
			if !idempotentByDefault[m] {
				continue
			}
			op := ops[method]
			id := op.OperationID
			if id == "" {
				id = lowerName(strings.ToLower(m) + " " + path)
			}
			v, ok := op.Extensions["x-idempotent"]
			switch {
			case ok && v == false:
				findings = append(findings, fmt.Sprintf("%s: operation %q (%s %s): not idempotent: it opts out with x-idempotent: false", file, id, m, path))
			case !ok && !hasRoot:
				findings = append(findings, fmt.Sprintf("%s: operation %q (%s %s): not idempotent: no x-idempotent on the operation or at the root", file, id, m, path))
			}
		}
	}
	sort.Strings(findings)
	return findings, nil
}
