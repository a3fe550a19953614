package generator

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemgen/idemgen/generator/internal/load"
)

// loadSpec reads the spec cfg names and loads it (internal/load): local
// $refs to other files are followed; remote ones only when
// cfg.AllowRemoteRefs is set.
func loadSpec(cfg *Config) (*openapi3.T, error) {
	data := cfg.SpecData
	if data == nil {
		var err error
		if data, err = os.ReadFile(cfg.Spec); err != nil {
			return nil, cfg.specFileError(err)
		}
		cfg.SpecData = data // for the lines of error messages (builder.locate)
	}
	doc, err := load.Document(data, cfg.Spec, load.Options{AllowRemoteRefs: cfg.AllowRemoteRefs})
	if err != nil {
		if problems := diagnose(data, specName(cfg), cfg.Spec); len(problems) > 0 {
			return nil, &SpecError{Problems: problems}
		}
		return nil, specLoadError(specName(cfg), data, err)
	}
	return doc, nil
}

func specName(cfg *Config) string { return filepath.Base(cfg.Spec) }

// specWarnings reports the known traps of real specs as warnings and, with
// validate, the first problem kin-openapi's validation of the whole document
// finds. Generation leaves that validation to lint: on Stripe's spec it took
// half of the generator's time, and the model checks what generation needs.
func specWarnings(doc *openapi3.T, file string, validate bool) []Warning {
	var ws []Warning
	add := func(kind WarningKind, where, format string, args ...any) {
		ws = append(ws, Warning{Where: where, Message: fmt.Sprintf(format, args...), Kind: kind})
	}
	if doc.Info == nil || doc.Info.Version == "" {
		add(WarnSpec, file, "info.version is empty")
	}
	schemes := map[string]bool{}
	if doc.Components != nil {
		for name := range doc.Components.SecuritySchemes {
			schemes[name] = true
		}
	}
	undefined := map[string][]string{}
	check := func(reqs *openapi3.SecurityRequirements, where string) {
		if reqs == nil {
			return
		}
		for _, req := range *reqs {
			for name := range req {
				if !schemes[name] {
					undefined[name] = append(undefined[name], where)
				}
			}
		}
	}
	check(&doc.Security, "the document")
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			check(op.Security, fmt.Sprintf("%s %s", method, path))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Webhooks)) {
		if item := doc.Webhooks[name]; item != nil {
			for method, op := range item.Operations() {
				check(op.Security, fmt.Sprintf("webhook %s %s", name, method))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(undefined)) {
		refs := undefined[name]
		sort.Strings(refs)
		add(WarnRefused, file, "security scheme %q is not defined (used by %d operations, e.g. %s); a requirement that names it never admits a request (401)", name, len(refs), refs[0])
	}
	if validate {
		if err := doc.Validate(context.Background(),
			openapi3.DisableExamplesValidation(),
			openapi3.DisableSchemaDefaultsValidation(),
			openapi3.DisableSchemaPatternValidation(),
			openapi3.AllowExtraSiblingFields("description", "summary")); err != nil {
			msg := strings.SplitN(err.Error(), "\n", 2)[0]
			add(WarnSpec, file, "openapi validation (not fatal): %s", msg)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].String() < ws[j].String() })
	return ws
}
