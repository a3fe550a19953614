package idem_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSnippets: a code block the README shows after a
// `<!-- snippet: PATH -->` line is a run of consecutive lines of PATH
// (indentation aside), so that it compiles and runs there
// (ExampleConfig_errors) and cannot drift.
func TestReadmeSnippets(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)
	marks := regexp.MustCompile("<!-- snippet: (\\S+) -->\n```go\n((?s:.*?))```\n").FindAllStringSubmatch(doc, -1)
	if len(marks) == 0 || len(marks) != strings.Count(doc, "<!-- snippet: ") {
		t.Fatalf("README: %d snippet marks followed by a go block, %d marks", len(marks), strings.Count(doc, "<!-- snippet: "))
	}
	for _, m := range marks {
		src, err := os.ReadFile("../../" + m[1])
		if err != nil {
			t.Errorf("README shows %s: %v", m[1], err)
			continue
		}
		if !strings.Contains("\n"+trimmedLines(string(src)), "\n"+trimmedLines(m[2])) {
			t.Errorf("README's snippet of %s is not in the file; copy it from there again:\n%s", m[1], m[2])
		}
	}
}

// trimmedLines is s with every line's leading and trailing blanks removed,
// each line ending in a newline.
func trimmedLines(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString(strings.TrimSpace(line))
		b.WriteString("\n")
	}
	return b.String()
}
