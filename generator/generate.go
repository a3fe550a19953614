// Package generator turns an OpenAPI 3.0/3.1 document annotated with
// x-idempotent into a typed net/http server package.
//
// The pipeline is one way: the spec is loaded (kin-openapi), a Model is built
// in which every name, order and validation is decided, the Model is rendered
// (jennifer for types, text/template for the server users customise), each
// file is gofmt'ed, and Generate returns the files in memory. Write and Diff
// are separate so that `idemgen generate --check` and the golden tests share
// Generate.
package generator

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/gofile"
	"github.com/idemgen/idemgen/generator/model"
	"github.com/idemgen/idemgen/templates"
)

// Generate loads the spec named by cfg and returns the generated files,
// sorted by name. It never writes. A spec with errors yields a *SpecError
// listing all of them.
func Generate(cfg Config) ([]gofile.File, []diag.Warning, error) {
	return formatRendered(render(cfg))
}

// formatRendered formats what render returned: Generate's second half.
func formatRendered(files []gofile.File, warnings []diag.Warning, err error) ([]gofile.File, []diag.Warning, error) {
	if err != nil {
		return nil, warnings, err
	}
	// All files are formatted together, on every core (formatSources).
	srcs := make([][]byte, len(files))
	for i, f := range files {
		srcs[i] = f.Content
	}
	outs, errs := formatSources(srcs)
	for i := range files {
		if err := errs[i]; err != nil {
			if strings.HasSuffix(files[i].Name, "types.gen.go") { // as jennifer words it
				return nil, warnings, fmt.Errorf("render %s: %w", files[i].Name, fmt.Errorf("Error %s while formatting source:\n%s", err, srcs[i]))
			}
			return nil, warnings, fmt.Errorf("render %s: generated code does not parse: %w\n%s", files[i].Name, err, numbered(srcs[i]))
		}
		files[i].Content = outs[i]
	}
	return files, warnings, nil
}

// render is Generate without formatting: the files as rendered, sorted by
// name.
func render(cfg Config) ([]gofile.File, []diag.Warning, error) {
	if err := cfg.normalise(); err != nil {
		return nil, nil, err
	}
	set, tw, err := loadTemplates(cfg.Templates)
	if err != nil {
		return nil, nil, err
	}
	doc, err := loadSpec(&cfg)
	if err != nil {
		return nil, nil, err
	}
	warnings := append(tw, specWarnings(doc, specName(&cfg), false)...)
	m, err := model.Build(doc, modelOptions(&cfg))
	if err != nil {
		return nil, warnings, err
	}
	warnings = append(warnings, m.Warnings...)

	// types.gen.go (and, split, the types' packages) renders on a core of
	// its own while the templates render; both only read the model.
	var typesFiles []gofile.File
	var typesErr error
	var typesDone sync.WaitGroup
	typesDone.Go(func() {
		for name, tf := range renderTypes(m) {
			tf.HeaderComment(gofile.Header(m.Version))
			tf.HeaderComment("source: " + m.Source)
			tf.NoFormat = true
			var src bytes.Buffer
			if err := tf.Render(&src); err != nil {
				typesErr = fmt.Errorf("render %s: %w", name, err)
				return
			}
			typesFiles = append(typesFiles, gofile.File{Name: name, Content: src.Bytes()})
		}
	})
	files, err := renderTemplates(&cfg, set, m)
	typesDone.Wait()
	if typesErr != nil {
		return nil, warnings, typesErr
	}
	if err != nil {
		return nil, warnings, err
	}
	files = append(files, typesFiles...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, warnings, nil
}

// renderTemplates renders the templates' files, unformatted.
func renderTemplates(cfg *Config, set *templateSet, m *model.Model) ([]gofile.File, error) {
	var files []gofile.File
	for _, tf := range templates.Files {
		if tf.Output == "" {
			continue
		}
		model, name := m, tf.Output
		if tf.Template == clientTemplate {
			model, name = clientTarget(cfg, m)
		}
		src, err := renderTemplate(set, tf.Template, name, model)
		if err != nil {
			return nil, err
		}
		if src == nil {
			continue // the template rendered nothing: no file
		}
		files = append(files, gofile.File{Name: name, Content: src})
	}
	return files, nil
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
		Split: cfg.Split, ImportPath: cfg.ImportPath}
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

func numbered(src []byte) string {
	var b strings.Builder
	for i, line := range strings.Split(string(src), "\n") {
		fmt.Fprintf(&b, "%5d  %s\n", i+1, line)
	}
	return b.String()
}
