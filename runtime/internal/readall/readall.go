// Package readall reads request bodies whole.
package readall

import "io"

// maxSized is the largest declared size read into a buffer of that size
// at once; a larger body grows as io.ReadAll's does, so that a
// Content-Length alone does not reserve memory the body may never fill.
const maxSized = 1 << 20

// ReadAll reads r to its end as io.ReadAll does, into a buffer of size
// bytes when the request declares it (Content-Length; -1 when unknown):
// one allocation of the body's size instead of io.ReadAll's 512 bytes,
// and its growth past them.
func ReadAll(r io.Reader, size int64) ([]byte, error) {
	if size < 0 || size > maxSized {
		return io.ReadAll(r)
	}
	// One byte more, so that the read which finds the end has room and
	// a body longer than declared is read on without growing first.
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
