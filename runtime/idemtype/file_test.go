package idemtype

import (
	"net/textproto"
	"reflect"
	"testing"
)

// TestFileText: a File's text form (what the fingerprint covers) keeps
// every field but Content, and tells files apart by any of them.
func TestFileText(t *testing.T) {
	f := File{Filename: "a b&c=.png", Size: 12, SHA256: "ab12",
		Header: textproto.MIMEHeader{"Content-Type": {"image/png"}, "Content-Disposition": {`form-data; name="file"; filename="a b&c=.png"`}, "X-Two": {"1", "2"}}}
	b, err := f.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	var g File
	if err := g.UnmarshalText(b); err != nil || !reflect.DeepEqual(f, g) {
		t.Fatalf("round trip of %s: %+v %v", b, g, err)
	}
	for _, other := range []File{
		{Filename: f.Filename, Size: 13, SHA256: f.SHA256, Header: f.Header},
		{Filename: f.Filename, Size: f.Size, SHA256: "ab13", Header: f.Header},
		{Filename: "b.png", Size: f.Size, SHA256: f.SHA256, Header: f.Header},
		{Filename: f.Filename, Size: f.Size, SHA256: f.SHA256, Header: textproto.MIMEHeader{"Content-Type": {"image/gif"}}},
	} {
		if o, _ := other.MarshalText(); string(o) == string(b) {
			t.Errorf("%+v has the text of %+v: %s", other, f, o)
		}
	}
	for _, bad := range []string{"", "file:", "sha-256=ab&size=1", "file:size=1", "file:sha-256=ab&size=x", "file:%zz"} {
		if err := new(File).UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if !(File{}).IsZero() || f.IsZero() {
		t.Error("IsZero")
	}
}
