package generator

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Write writes files into dir, creating it, and leaves files whose content
// is unchanged untouched. It returns the names of the files it wrote.
func Write(dir string, files []File) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var wrote []string
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return wrote, err
		}
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.Content) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, f.Content, 0o644); err != nil {
			return wrote, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return wrote, err
		}
		wrote = append(wrote, f.Name)
	}
	return wrote, nil
}

// Diff compares files with what dir holds and returns a unified-style diff
// of every stale file; "" means the directory is up to date.
func Diff(dir string, files []File) (string, error) {
	var b strings.Builder
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		old, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
		if bytes.Equal(old, f.Content) {
			continue
		}
		b.WriteString(diffText(filepath.ToSlash(path), old, f.Content))
	}
	return b.String(), nil
}

// diffText shows one hunk: the lines between the common prefix and suffix.
func diffText(name string, old, new []byte) string {
	a, b := splitLines(old), splitLines(new)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var s strings.Builder
	from := "a/" + name
	if old == nil {
		from = "/dev/null"
	}
	fmt.Fprintf(&s, "--- %s\n+++ b/%s\n", from, name)
	ctxStart := max(pre-3, 0)
	aEnd, bEnd := len(a)-suf, len(b)-suf
	ctxEnd := min(suf, 3)
	fmt.Fprintf(&s, "@@ -%d,%d +%d,%d @@\n", ctxStart+1, aEnd-ctxStart+ctxEnd, ctxStart+1, bEnd-ctxStart+ctxEnd)
	for _, l := range a[ctxStart:pre] {
		s.WriteString(" " + l + "\n")
	}
	for _, l := range a[pre:aEnd] {
		s.WriteString("-" + l + "\n")
	}
	for _, l := range b[pre:bEnd] {
		s.WriteString("+" + l + "\n")
	}
	for _, l := range a[aEnd : aEnd+ctxEnd] {
		s.WriteString(" " + l + "\n")
	}
	return s.String()
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}
