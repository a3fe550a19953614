package idemtype

import (
	"fmt"
	"io"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// File is a file part of a multipart/form-data request body as a handler
// receives it: the part's headers and its content as a stream.
//
// The generated server reads the part once, hashing it for the idempotency
// fingerprint while it copies it to a temporary file, and hands the handler
// a reader of that file: however large, a file is never held in memory. The
// temporary file is removed when the request has been answered; read
// Content within the handler.
//
// The fingerprint covers the content (SHA256) and every part header, so two
// requests with the same fingerprint give the handler equal Files.
type File struct {
	// Filename is the filename parameter of the part's Content-Disposition
	// ("" when it has none).
	Filename string
	// Header holds the part's headers (Content-Disposition, Content-Type, ...).
	Header textproto.MIMEHeader
	// Size is the length of the content in bytes.
	Size int64
	// SHA256 is the lower-case hex SHA-256 of the content.
	SHA256 string
	// Content reads the content from its start.
	Content io.Reader
}

// ContentType is the part's Content-Type header ("" when it has none; a
// multipart part without one is text/plain).
func (f File) ContentType() string { return f.Header.Get("Content-Type") }

// IsZero reports whether f is the zero File (an absent optional part).
func (f File) IsZero() bool {
	return f.Filename == "" && f.Header == nil && f.Size == 0 && f.SHA256 == "" && f.Content == nil
}

// Read reads from Content.
func (f File) Read(p []byte) (int, error) {
	if f.Content == nil {
		return 0, io.EOF
	}
	return f.Content.Read(p)
}

// MarshalText encodes what the fingerprint covers of f — its digest, size,
// filename and part headers — in one line: the form in which a File is
// part of a request's canonical encoding. The content is not part of it.
func (f File) MarshalText() ([]byte, error) {
	v := url.Values{"sha-256": {f.SHA256}, "size": {strconv.FormatInt(f.Size, 10)}}
	if f.Filename != "" {
		v.Set("filename", f.Filename)
	}
	names := make([]string, 0, len(f.Header))
	for k := range f.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v["h:"+strings.ToLower(k)] = f.Header[k]
	}
	return []byte("file:" + v.Encode()), nil
}

// UnmarshalText decodes what MarshalText encodes; Content is left nil.
func (f *File) UnmarshalText(b []byte) error {
	s, ok := strings.CutPrefix(string(b), "file:")
	if !ok {
		return fmt.Errorf("not a file part")
	}
	v, err := url.ParseQuery(s)
	if err != nil {
		return fmt.Errorf("not a file part: %w", err)
	}
	size, err := strconv.ParseInt(v.Get("size"), 10, 64)
	if err != nil || v.Get("sha-256") == "" {
		return fmt.Errorf("not a file part")
	}
	out := File{Filename: v.Get("filename"), Size: size, SHA256: v.Get("sha-256")}
	for k, vals := range v {
		if name, ok := strings.CutPrefix(k, "h:"); ok {
			if out.Header == nil {
				out.Header = textproto.MIMEHeader{}
			}
			out.Header[textproto.CanonicalMIMEHeaderKey(name)] = vals
		}
	}
	*f = out
	return nil
}

// MultipartFile returns what a client sends of f in a multipart/form-data
// body: its filename, part headers and content (idemclient.FilePart).
func (f File) MultipartFile() (string, textproto.MIMEHeader, io.Reader) {
	return f.Filename, f.Header, f.Content
}
