package emit

// The template emitter: the importer that records and names imports, the
// func map templates print the model with, and the composite literals of
// the runtime tables (request schemas, parameters, media types, security
// schemes, path segments, limits) printed from the model's data with the
// importer's qualifiers.

import (
	"bytes"
	"fmt"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode"

	"github.com/idemgen/idemgen/generator/diag"
	"github.com/idemgen/idemgen/generator/gofile"
	"github.com/idemgen/idemgen/generator/internal/reserved"
	"github.com/idemgen/idemgen/generator/internal/suggest"
	"github.com/idemgen/idemgen/generator/model"
	"github.com/idemgen/idemgen/templates"
)

// importer records the imports a template uses while it renders, and gives
// each a unique, valid name the moment it is first printed (protobuf-go's
// QualifiedGoIdent): gopkg.in/yaml.v3 is yaml, a second package named yaml
// is yaml2, and no import takes a name the templates use for their own
// identifiers.
type importer struct {
	paths map[string]string // import path -> name
	names map[string]string // name -> import path
}

func newImporter() *importer {
	return &importer{paths: map[string]string{}, names: map[string]string{}}
}

func (im *importer) reset() {
	clear(im.paths)
	clear(im.names)
}

func (im *importer) name(path string) string {
	if n, ok := im.paths[path]; ok {
		return n
	}
	base := cleanPackageName(pkgName(path))
	n := base
	for i := 2; im.names[n] != "" || reserved.TemplateIdents[n]; i++ {
		n = base + strconv.Itoa(i)
	}
	im.paths[path], im.names[n] = n, path
	return n
}

type importRef struct {
	im   *importer
	path string
}

// String records the import when the template prints the reference.
func (r importRef) String() string { return r.im.name(r.path) }

// pkgName guesses the package name of an import path: its last element, or
// the one before a major version element (github.com/jackc/pgx/v5 is pgx).
func pkgName(path string) string {
	parts := strings.Split(path, "/")
	last := parts[len(parts)-1]
	if len(parts) > 1 && strings.HasPrefix(last, "v") {
		if _, err := strconv.Atoi(last[1:]); err == nil {
			last = parts[len(parts)-2]
		}
	}
	return last
}

var gopkgVersion = regexp.MustCompile(`\.v[0-9]+$`)

// cleanPackageName makes a Go identifier of a guessed package name:
// yaml.v3 -> yaml, go-cmp -> go_cmp.
func cleanPackageName(name string) string {
	name = gopkgVersion.ReplaceAllString(name, "")
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) && i > 0:
			b.WriteRune(r)
		case unicode.IsDigit(r):
			b.WriteString("_")
			b.WriteRune(r)
		default:
			b.WriteString("_")
		}
	}
	out := b.String()
	if out == "" || token.IsKeyword(out) {
		out += "_"
	}
	return out
}

func funcMap(im *importer) template.FuncMap {
	return template.FuncMap{
		"qual":  func(path string) importRef { return importRef{im, path} },
		"quote": strconv.Quote,
		// literal prints a runtime table entry of the model (see literal):
		// {{literal .}} -> {In: "query", Name: "limit", ...}.
		"literal": func(v any) (string, error) { return literal(im, v) },
		// schemeParams and schemeArgs are a security scheme's parameters
		// in its Security method after ctx and the arguments the hook
		// passes from c, an *idemimpl.Credential.
		"schemeParams": func(s *model.SecurityScheme) string { return schemeParams(im, s) },
		"schemeArgs":   schemeArgs,
		// headerParser is the idemimpl function that parses a response
		// header's value: idemimpl.ParseInt64, idemimpl.ParseEnum[Status];
		// types is the qualifier of the package's types ("" or "api.").
		"headerParser": func(h *model.Header, types string) (string, error) { return headerParser(im, h, types) },
		// describeSecurity says a list of security alternatives in words:
		// "apiKey and bearerAuth, or basicAuth".
		"describeSecurity": describeSecurity,
		// goType prints a GoType, recording the imports it needs:
		// {{goType .Payload}} -> []time.Time (imports time).
		"goType": func(t model.GoType) string { return spellType(t, sourceTypes{im}) },
		// goDefault spells a default value as a Go expression of its
		// type: {{goDefault .Default}} -> int64(10), PetStatusAvailable;
		// "" for objects and arrays (decode its JSON instead).
		"goDefault": func(d *model.Default) string { return goLiteral(d.Type, d.Value) },
		// idemConst names the runtime constant of a policy value:
		// {{idemConst "KeyFormat" "uuidv7"}} -> idem.KeyFormatUUIDv7.
		"idemConst": func(kind, value string) (string, error) {
			v, ok := policyValue(kind, value)
			if !ok {
				return "", fmt.Errorf("idemConst: no x-idempotent field %s", kind)
			}
			id, err := runtimeName(v)
			if err != nil {
				return "", fmt.Errorf("idemConst: no constant for %s %q", kind, value)
			}
			return importRef{im, id.path}.String() + "." + id.name, nil
		},
		"duration": func(d time.Duration) string {
			t := importRef{im, "time"}.String()
			switch {
			case d%time.Hour == 0:
				return fmt.Sprintf("%d * %s.Hour", d/time.Hour, t)
			case d%time.Minute == 0:
				return fmt.Sprintf("%d * %s.Minute", d/time.Minute, t)
			case d%time.Second == 0:
				return fmt.Sprintf("%d * %s.Second", d/time.Second, t)
			}
			return fmt.Sprintf("%s.Duration(%d)", t, int64(d))
		},
		"stringSlice": func(s []string) string {
			if s == nil {
				return "nil"
			}
			q := make([]string, len(s))
			for i, x := range s {
				q[i] = strconv.Quote(x)
			}
			return "[]string{" + strings.Join(q, ", ") + "}"
		},
		"intSlice": func(s []int) string {
			if s == nil {
				return "nil"
			}
			q := make([]string, len(s))
			for i, x := range s {
				q[i] = strconv.Itoa(x)
			}
			return "[]int{" + strings.Join(q, ", ") + "}"
		},
	}
}

// Templates is a fresh template set per run, and the importer its
// templates print imports through (reset per file).
type Templates struct {
	t  *template.Template
	im *importer
}

// LoadTemplates parses the embedded defaults, then the user's directory: a
// file there replaces the default of the same name; any other name is an
// error. A whole template replaced (not slots.tmpl) is a warning unless it
// is a copy of today's built-in one (its eject header says which).
func LoadTemplates(dir string) (*Templates, []diag.Warning, error) {
	im := newImporter()
	set := template.New("idemgen").Funcs(funcMap(im))
	known := map[string]bool{}
	for _, tf := range templates.Files {
		data, err := fs.ReadFile(templates.FS, tf.Template)
		if err != nil {
			return nil, nil, err
		}
		if _, err := set.New(tf.Template).Parse(string(data)); err != nil {
			return nil, nil, fmt.Errorf("default template %s: %w", tf.Template, err)
		}
		known[tf.Template] = true
	}
	if dir == "" {
		return &Templates{set, im}, nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("templates: %w", err)
	}
	var warnings []diag.Warning
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if !known[e.Name()] {
			names := slices.Sorted(maps.Keys(known))
			return nil, nil, fmt.Errorf("templates: %s matches no default template (want one of %s)%s", path, strings.Join(names, ", "), suggest.DidYouMean(e.Name(), names))
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("templates: %w", err)
		}
		if _, err := set.New(e.Name()).Parse(string(data)); err != nil {
			return nil, nil, fmt.Errorf("templates: %w", err)
		}
		// A whole template replaced stops getting idemgen's fixes: say so
		// unless it is a copy of today's built-in one.
		if e.Name() != "slots.tmpl" {
			switch sum, now := templates.EjectedSum(data), templates.Sum(e.Name()); {
			case sum == "":
				warnings = append(warnings, diag.Warning{Where: path, Message: fmt.Sprintf("replaces the built-in %s, and idemgen cannot tell which version it copies (no `idemgen templates eject` header): it no longer gets idemgen's fixes; prefer the slots of slots.tmpl, or eject it again and carry your changes over", e.Name()), Kind: diag.WarnTemplates})
			case sum != now:
				warnings = append(warnings, diag.Warning{Where: path, Message: fmt.Sprintf("replaces the built-in %s, which changed since this copy was ejected (sha256:%s, now sha256:%s): eject it again into another directory and carry your changes over, or move them into slots.tmpl", e.Name(), sum, now), Kind: diag.WarnTemplates})
			}
		}
	}
	return &Templates{set, im}, warnings, nil
}

// renderTemplate renders a template into a Go file, not yet formatted; nil
// when the template renders nothing.
func renderTemplate(set *Templates, name, output string, m *model.Model) ([]byte, error) {
	set.im.reset()
	var body bytes.Buffer
	if err := set.t.ExecuteTemplate(&body, name, m); err != nil {
		return nil, fmt.Errorf("render %s: %w", output, err)
	}
	if len(bytes.TrimSpace(body.Bytes())) == 0 {
		return nil, nil
	}
	var src bytes.Buffer
	src.WriteString("// " + gofile.Header(m.Version) + "\n")
	fmt.Fprintf(&src, "// source: %s\n\npackage %s\n\n", m.Source, m.Package)
	if len(set.im.paths) > 0 {
		src.WriteString("import (\n")
		var std, other []string
		for _, p := range slices.Sorted(maps.Keys(set.im.paths)) {
			if strings.Contains(strings.Split(p, "/")[0], ".") {
				other = append(other, p)
			} else {
				std = append(std, p)
			}
		}
		spec := func(p string) string {
			if n := set.im.paths[p]; n != pkgName(p) {
				return n + " " + strconv.Quote(p)
			}
			return strconv.Quote(p)
		}
		for _, p := range std {
			fmt.Fprintf(&src, "\t%s\n", spec(p))
		}
		if len(std) > 0 && len(other) > 0 {
			src.WriteString("\n")
		}
		for _, p := range other {
			fmt.Fprintf(&src, "\t%s\n", spec(p))
		}
		src.WriteString(")\n\n")
	}
	src.Write(body.Bytes())
	return src.Bytes(), nil
}
