// Package emit renders a model.Model into Go files: the types with
// jennifer (types.go, optypes.go, split.go), the server, client and
// webhooks with the templates users may override (templates.go: the
// importer, the func map and the runtime tables' literals in literals.go),
// and formats them (format.go). It only reads the model. Every Go type is
// spelt by spellType (gotype.go) and every runtime constant the model holds
// by runtimeNames (runtime.go), through jennifer's or the templates'
// importer, so that an import that clashes is renamed rather than breaking
// the build.
package emit

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/idemgen/idemgen/generator/gofile"
	"github.com/idemgen/idemgen/generator/model"
	"github.com/idemgen/idemgen/templates"
)

// RenderOptions say where the client goes when it has a package of its own:
// ClientFile is the path of its client.gen.go relative to the output
// directory, ClientPackage its package name, ClientTypesImport the import
// path of the server's package. Zero: client.gen.go beside the server.
type Options struct {
	ClientFile, ClientPackage, ClientTypesImport string
}

// Render renders m with the templates of set and jennifer, unformatted:
// the files sorted by name (Format formats them).
func Render(set *Templates, m *model.Model, opts Options) ([]gofile.File, error) {
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
	files, err := renderTemplates(set, m, &opts)
	typesDone.Wait()
	if typesErr != nil {
		return nil, typesErr
	}
	if err != nil {
		return nil, err
	}
	files = append(files, typesFiles...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// renderTemplates renders the templates' files, unformatted.
func renderTemplates(set *Templates, m *model.Model, opts *Options) ([]gofile.File, error) {
	var files []gofile.File
	for _, tf := range templates.Files {
		if tf.Output == "" {
			continue
		}
		data, name := m, tf.Output
		if tf.Template == clientTemplate {
			data, name = clientTarget(opts, m)
		}
		src, err := renderTemplate(set, tf.Template, name, data)
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

const clientTemplate = "client.go.tmpl"

// clientTarget is the model the client template renders and the file it
// writes, relative to the server's output directory: the server's model and
// client.gen.go, or, for a client package of its own, the model under the
// client's package name and a path into the client's directory.
func clientTarget(opts *Options, m *model.Model) (*model.Model, string) {
	if opts.ClientFile == "" {
		return m, "client.gen.go"
	}
	cm := *m
	cm.Package = opts.ClientPackage
	cm.Client.TypesImport = opts.ClientTypesImport
	return &cm, opts.ClientFile
}

// Format formats the rendered files, all together, on every core
// (formatSources); a file that does not parse is an error that shows it.
func Format(files []gofile.File) ([]gofile.File, error) {
	// All files are formatted together, on every core (formatSources).
	srcs := make([][]byte, len(files))
	for i, f := range files {
		srcs[i] = f.Content
	}
	outs, errs := formatSources(srcs)
	for i := range files {
		if err := errs[i]; err != nil {
			if strings.HasSuffix(files[i].Name, "types.gen.go") { // as jennifer words it
				return nil, fmt.Errorf("render %s: %w", files[i].Name, fmt.Errorf("Error %s while formatting source:\n%s", err, srcs[i]))
			}
			return nil, fmt.Errorf("render %s: generated code does not parse: %w\n%s", files[i].Name, err, numbered(srcs[i]))
		}
		files[i].Content = outs[i]
	}
	return files, nil
}

func numbered(src []byte) string {
	var b strings.Builder
	for i, line := range strings.Split(string(src), "\n") {
		fmt.Fprintf(&b, "%5d  %s\n", i+1, line)
	}
	return b.String()
}
