// Package generator turns an OpenAPI 3.0/3.1 document annotated with
// x-idempotent into a typed net/http server package: it is the runner of
// idemgen's commands (Generate, Write, Diff, Lint, Load and their Config).
//
// The pipeline is one way. The spec is loaded with kin-openapi
// (internal/load); package model builds the Model, in which every name,
// order and validation is decided; the emitters (internal/emit) render it
// (jennifer for types, text/template for the server users customise) and
// gofmt each file; Generate returns the files in memory. Write and Diff
// are separate so that `idemgen generate --check` and the golden tests
// share Generate. Warnings and spec errors are package diag's, the files
// package gofile's; this package names them too (Warning, SpecError,
// File).
package generator

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/idemgen/idemgen/generator/internal/emit"
	"github.com/idemgen/idemgen/generator/model"
)

// Generate loads the spec named by cfg and returns the generated files,
// sorted by name. It never writes. A spec with errors yields a *SpecError
// listing all of them.
func Generate(cfg Config) ([]File, []Warning, error) {
	return formatRendered(render(cfg))
}

// formatRendered formats what render returned: Generate's second half.
func formatRendered(files []File, warnings []Warning, err error) ([]File, []Warning, error) {
	if err != nil {
		return nil, warnings, err
	}
	files, err = emit.Format(files)
	if err != nil {
		return nil, warnings, err
	}
	return files, warnings, nil
}

// render is Generate without formatting: the files as rendered, sorted by
// name.
func render(cfg Config) ([]File, []Warning, error) {
	if err := cfg.normalise(); err != nil {
		return nil, nil, err
	}
	set, tw, err := emit.LoadTemplates(cfg.Templates)
	if err != nil {
		return nil, nil, err
	}
	doc, err := loadSpec(&cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := cfg.decideSplit(doc); err != nil {
		return nil, tw, err
	}
	warnings := append(tw, specWarnings(doc, specName(&cfg), false)...)
	m, err := model.Build(doc, modelOptions(&cfg))
	if err != nil {
		return nil, warnings, err
	}
	warnings = append(warnings, m.Warnings...)
	files, err := emit.Render(set, m, emitOptions(&cfg))
	return files, warnings, err
}

// modelOptions are the model's options of the run cfg.
func modelOptions(cfg *Config) model.Options {
	var rename map[string]model.Rename
	if cfg.Rename != nil {
		rename = make(map[string]model.Rename, len(cfg.Rename))
		for loc, r := range cfg.Rename {
			rename[loc] = model.Rename(r)
		}
	}
	return model.Options{File: specName(cfg), Data: cfg.SpecData, Source: sourcePath(cfg), Package: cfg.Package, Version: cfg.Version,
		BasePath: cfg.BasePath, RequireIdempotent: cfg.RequireIdempotent, Rename: rename, SkipValidation: cfg.Validation.Skip,
		WebhookSource: cfg.WebhookSource, Client: cfg.Client.Enabled, ClientPackage: cfg.Client.separate(),
		Split: cfg.split, ImportPath: cfg.ImportPath}
}

// emitOptions are the emitters' options of the run cfg.
func emitOptions(cfg *Config) emit.Options {
	if !cfg.Client.separate() {
		return emit.Options{}
	}
	name := filepath.Join(cfg.Client.Output, "client.gen.go")
	if rel, err := filepath.Rel(cfg.Output, name); err == nil {
		name = rel
	}
	return emit.Options{ClientFile: filepath.ToSlash(name), ClientPackage: cfg.Client.Package, ClientTypesImport: cfg.Client.TypesImport}
}

// sourcePath names the spec in generated headers, doc comments and
// messages: Config.Source (the spec as a config file writes it), else the
// spec's path as given; an absolute path is made relative to the module
// that holds the output directory, so that no machine's paths end up in
// generated files.
func sourcePath(cfg *Config) string {
	if cfg.Source != "" {
		return filepath.ToSlash(cfg.Source)
	}
	if !filepath.IsAbs(cfg.Spec) {
		return filepath.ToSlash(filepath.Clean(cfg.Spec))
	}
	if out, err := filepath.Abs(cfg.Output); err == nil {
		for dir := out; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				if rel, err := filepath.Rel(dir, cfg.Spec); err == nil && !strings.HasPrefix(rel, "..") {
					return filepath.ToSlash(rel)
				}
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return filepath.Base(cfg.Spec)
}
