package idemimpl_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http/httptest"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemtype"
)

// BenchmarkUpload decodes a multipart body with one file part of each size
// as a stream (BodyStream: the file is spooled to a temporary file while it
// is hashed) and, as the baseline, as bytes read whole into memory first
// (what an operation whose body is not streamed costs: io.ReadAll, then
// Body). B/op is the point: the stream's stays flat as the file grows.
func BenchmarkUpload(b *testing.B) {
	schemas := &idemimpl.Schemas{List: []idemimpl.Schema{{}, {Types: idemimpl.TypeObject}}}
	body := &idemimpl.Body{Required: true, Media: []idemimpl.Media{{Type: "multipart/form-data", Decode: idemimpl.AsMultipart, Schema: 1}}}
	for _, size := range []int{1 << 20, 16 << 20} {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		w, _ := mw.CreateFormFile("file", "f.bin")
		w.Write(bytes.Repeat([]byte{7}, size))
		mw.Close()
		data, ct := buf.Bytes(), mw.FormDataContentType()
		b.Run(fmt.Sprintf("stream/%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("POST", "/files", nil)
				r.Header.Set("Content-Type", ct)
				q := idemimpl.NewRequest(r, schemas)
				var target struct {
					File idemtype.File `json:"file"`
				}
				q.BodyStream(bytes.NewReader(data), body, &target)
				if err := q.Err(); err != nil {
					b.Fatal(err)
				}
				q.Close()
			}
		})
		b.Run(fmt.Sprintf("buffered/%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			raw := &idemimpl.Body{Required: true, Media: []idemimpl.Media{{Type: "multipart/form-data", Decode: idemimpl.AsBytes}}}
			for b.Loop() {
				r := httptest.NewRequest("POST", "/files", nil)
				r.Header.Set("Content-Type", ct)
				all, _ := io.ReadAll(bytes.NewReader(data))
				q := idemimpl.NewRequest(r, schemas)
				var target []byte
				q.Body(all, raw, &target)
				if err := q.Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
