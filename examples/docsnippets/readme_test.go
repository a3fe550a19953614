package docsnippets

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadme: the README stays short (at most 250 lines: reference material
// belongs in docs/) and opens with a table of contents whose every entry
// is one of its ## headings, and every ## heading has an entry.
func TestReadme(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 250 {
		t.Errorf("README.md has %d lines, at most 250", len(lines))
	}
	entry := regexp.MustCompile(`^- \[[^\]]+\]\(#([^)]+)\)$`)
	toc, headings := map[string]bool{}, map[string]bool{}
	inCode := false
	for _, l := range lines {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if m := entry.FindStringSubmatch(l); m != nil && !inCode {
			toc[m[1]] = true
		}
		if h, ok := strings.CutPrefix(l, "## "); ok && !inCode {
			headings[anchor(h)] = true
		}
	}
	if len(toc) == 0 {
		t.Error("README.md has no table of contents (- [Title](#anchor) lines)")
	}
	for a := range toc {
		if !headings[a] {
			t.Errorf("README.md: the contents link #%s, which no ## heading has", a)
		}
	}
	for a := range headings {
		if !toc[a] {
			t.Errorf("README.md: ## heading #%s is not in the contents", a)
		}
	}
}

// anchor is GitHub's anchor of a heading: lower case, spaces to hyphens,
// punctuation but hyphens and underscores dropped.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
