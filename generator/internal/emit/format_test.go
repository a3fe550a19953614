package emit

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"
	"testing"
)

// TestFormatSourcesErrors: a file that does not parse gets go/format's
// error, and a cut in the wrong place (a comment and a local type at the
// start of a line inside a function) formats the file whole, correctly.
func TestFormatSourcesErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("package p\n\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "// T%d is a type.\ntype T%d struct{\nA int\n}\n", i, i)
	}
	b.WriteString("// F is a function.\nfunc F() {\nx := 1\n// t is local.\ntype t int\n_ = t(x)\n}\n")
	good := []byte(b.String())
	bad := []byte(b.String() + "func (\n")
	outs, errs := formatSources([][]byte{good, bad})
	want, err := format.Source(good)
	if err != nil || errs[0] != nil || !bytes.Equal(outs[0], want) {
		t.Errorf("good: %v, %v, equal %v", err, errs[0], bytes.Equal(outs[0], want))
	}
	_, wantErr := format.Source(bad)
	if errs[1] == nil || wantErr == nil || errs[1].Error() != wantErr.Error() {
		t.Errorf("bad: error %v, want %v", errs[1], wantErr)
	}
	if n := len(CutDecls(good, 1<<10)); n < 10 {
		t.Errorf("cut into %d chunks", n)
	}
}
