package emit

import (
	"bytes"
	"errors"
	"go/format"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// errChunkPrefix is a chunk whose formatted text lost its package clause.
var errChunkPrefix = errors.New("chunk without its package clause")

// formatSources formats Go files as go/format.Source does, on every core:
// formatting was a third of the generator's time on Stripe's spec, one file
// of 100 000 lines and one of 30 000. Each file is cut into chunks before
// top-level declarations that have a doc comment, which gofmt always
// separates from what precedes them by exactly one blank line, so each chunk
// can be formatted alone (after a package clause of its own, dropped again)
// and the results joined with that blank line. A cut in the wrong place (a
// comment and a local type at the start of a line inside a function, as
// jennifer writes bodies unindented) leaves a chunk that does not parse: the
// file is then formatted whole, as is any file whose chunk fails, so errors
// are go/format's own. TestFormatSourcesAlike holds the result to
// go/format.Source byte for byte on every spec the tests generate.
func formatSources(srcs [][]byte) ([][]byte, []error) {
	type chunk struct {
		file, index int
		src         []byte
		out         []byte
		err         error
	}
	procs := runtime.GOMAXPROCS(0)
	total := 0
	for _, s := range srcs {
		total += len(s)
	}
	target := max(total/(4*procs), 64<<10)
	var chunks []*chunk
	counts := make([]int, len(srcs))
	for i, s := range srcs {
		for j, c := range CutDecls(s, target) {
			chunks = append(chunks, &chunk{file: i, index: j, src: c})
			counts[i]++
		}
	}
	order := slices.Clone(chunks)
	slices.SortStableFunc(order, func(a, b *chunk) int { return len(b.src) - len(a.src) })
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(procs, len(order)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(order) {
					return
				}
				c := order[i]
				src := c.src
				if c.index > 0 {
					src = append([]byte(chunkPackage), src...)
				}
				c.out, c.err = format.Source(src)
				if c.err == nil && c.index > 0 {
					var ok bool
					if c.out, ok = bytes.CutPrefix(c.out, []byte(chunkPackage+"\n")); !ok {
						c.err = errChunkPrefix
					}
				}
			}
		})
	}
	wg.Wait()
	outs := make([][]byte, len(srcs))
	errs := make([]error, len(srcs))
	whole := make([]bool, len(srcs))
	for _, c := range chunks {
		if c.err != nil {
			whole[c.file] = true
		}
	}
	for _, c := range chunks {
		if whole[c.file] {
			continue
		}
		if c.index > 0 {
			outs[c.file] = append(outs[c.file], '\n')
		}
		outs[c.file] = append(outs[c.file], c.out...)
	}
	for i, s := range srcs {
		if whole[i] {
			outs[i], errs[i] = format.Source(s)
		}
	}
	return outs, errs
}

// chunkPackage starts every chunk but a file's first.
const chunkPackage = "package p\n"

// CutDecls cuts src into chunks of at least size bytes, each but the first
// starting with the doc comment of a top-level declaration: a line starting
// with "//" that follows a line that is not a comment, in a run of such
// lines ending right before a line starting with func, type, var or const.
func CutDecls(src []byte, size int) [][]byte {
	var out [][]byte
	start := 0  // of the current chunk
	group := -1 // start of the current run of comment lines, -1 outside one
	for pos := 0; pos < len(src); {
		end := bytes.IndexByte(src[pos:], '\n')
		if end < 0 {
			break
		}
		end += pos + 1
		line := src[pos:end]
		switch {
		case bytes.HasPrefix(line, []byte("//")):
			if group < 0 {
				group = pos
			}
		case group >= 0 && group-start >= size && declStart(line):
			out = append(out, src[start:group])
			start = group
			group = -1
		default:
			group = -1
		}
		pos = end
	}
	return append(out, src[start:])
}

func declStart(line []byte) bool {
	for _, kw := range []string{"func ", "func(", "type ", "var ", "var(", "const ", "const("} {
		if bytes.HasPrefix(line, []byte(kw)) {
			return true
		}
	}
	return false
}
