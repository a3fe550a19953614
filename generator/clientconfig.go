package generator

import (
	"bufio"
	"errors"
	"fmt"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ClientConfig is the `client` section of the config: whether idemgen also
// emits a typed client (client.gen.go), and where.
//
//	client: true               # client.gen.go in the server's package
//	client:
//	  output: ../apiclient     # its own package, importing the server package's types
//	  package: apiclient
//
// In its own package the client refers to the request and response types
// of the server's package, imported by the path of Output inside its Go
// module (found from the go.mod above it) unless TypesImport names it.
type ClientConfig struct {
	Enabled     bool
	Output      string `yaml:"output"`      // directory of a client package of its own; "" for the server's package
	Package     string `yaml:"package"`     // its package name; default the directory's name
	TypesImport string `yaml:"typesImport"` // import path of the server package; default from go.mod
}

// UnmarshalYAML accepts `client: true|false` or a mapping.
func (c *ClientConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("line %d: client: want true, false or a mapping", n.Line)
		}
		*c = ClientConfig{Enabled: b}
		return nil
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch k := n.Content[i]; k.Value {
			case "output", "package", "typesImport":
			default:
				return fmt.Errorf("line %d: client.%s: unknown field (want output, package or typesImport)", k.Line, k.Value)
			}
		}
	}
	type plain ClientConfig
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = ClientConfig(p)
	c.Enabled = true
	return nil
}

// separate reports whether the client has a package of its own.
func (c *ClientConfig) separate() bool { return c.Enabled && c.Output != "" }

// normalise fills the client's defaults once Output is known.
func (c *ClientConfig) normalise(serverOutput string) error {
	if !c.separate() {
		return nil
	}
	same, err := sameDir(c.Output, serverOutput)
	if err != nil {
		return err
	}
	if same {
		// The server's directory: the same package.
		c.Output, c.Package, c.TypesImport = "", "", ""
		return nil
	}
	if c.Package == "" {
		abs, err := filepath.Abs(c.Output)
		if err != nil {
			return err
		}
		c.Package = filepath.Base(abs)
	}
	if !token.IsIdentifier(c.Package) {
		return fmt.Errorf("config: client.package %q is not a Go identifier", c.Package)
	}
	if c.TypesImport == "" {
		p, err := importPath(serverOutput)
		if err != nil {
			return fmt.Errorf("config: client: the server package's import path: %w (set client.typesImport)", err)
		}
		c.TypesImport = p
	}
	return nil
}

func sameDir(a, b string) (bool, error) {
	x, err := filepath.Abs(a)
	if err != nil {
		return false, err
	}
	y, err := filepath.Abs(b)
	return x == y, err
}

// importPath is the import path of the package in dir: the module path of
// the nearest go.mod above it joined with dir's path below the module root.
func importPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		mod, err := modulePath(filepath.Join(d, "go.mod"))
		if err == nil {
			rel, err := filepath.Rel(d, abs)
			if err != nil {
				return "", err
			}
			if rel == "." {
				return mod, nil
			}
			return mod + "/" + filepath.ToSlash(rel), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", abs)
		}
	}
}

// modulePath reads the module directive of a go.mod file.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			rest = strings.TrimSpace(rest)
			if i := strings.Index(rest, "//"); i >= 0 {
				rest = strings.TrimSpace(rest[:i])
			}
			if uq, err := strconv.Unquote(rest); err == nil {
				rest = uq
			}
			if rest != "" {
				return rest, nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s has no module directive", gomod)
}
