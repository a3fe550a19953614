package readall

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAll: whatever the declared size — exact, unknown, short, long,
// past the sized limit — the bytes read are the body's, and a reader's
// error comes back with what was read before it.
func TestReadAll(t *testing.T) {
	body := strings.Repeat("0123456789", 100)
	for _, size := range []int64{-1, 0, 1, 999, 1000, 1001, 5000, maxSized + 1} {
		for name, r := range map[string]io.Reader{
			"whole":   strings.NewReader(body),
			"bytes":   iotest.OneByteReader(strings.NewReader(body)),
			"halves":  iotest.HalfReader(strings.NewReader(body)),
			"dataEOF": iotest.DataErrReader(strings.NewReader(body)),
		} {
			got, err := ReadAll(r, size)
			if err != nil || string(got) != body {
				t.Errorf("size %d, %s: %d bytes, %v; want the %d of the body", size, name, len(got), err, len(body))
			}
		}
	}
	boom := errors.New("boom")
	got, err := ReadAll(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), 10)
	if !errors.Is(err, boom) || !bytes.Equal(got, []byte("abc")) {
		t.Errorf("failing reader: %q, %v", got, err)
	}
	rd := strings.NewReader(body)
	if n := testing.AllocsPerRun(100, func() { rd.Reset(body); ReadAll(rd, int64(len(body))) }); n != 1 {
		t.Errorf("declared size: %v allocations, want 1", n)
	}
}
