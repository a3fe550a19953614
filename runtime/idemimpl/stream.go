package idemimpl

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/idemgen/idemgen/internal/jsonkit"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/idemtype"
)

// MaxPartMemory bounds the parts of a multipart/form-data body that are not
// files, in all: they are read into memory to be typed and validated. A
// larger sum is a 413.
const MaxPartMemory = 1 << 20

// spooled is content copied to a temporary file while it was hashed.
type spooled struct {
	f    *os.File
	size int64
	sum  string // lower-case hex SHA-256
}

// spool copies r to a temporary file, hashing it on the way, and keeps the
// file until Close. Memory use is one copy buffer, whatever the size.
func (q *Request) spool(r io.Reader) (*spooled, error) {
	f, err := os.CreateTemp("", "idemgen-body-*")
	if err != nil {
		return nil, fmt.Errorf("idemimpl: spooling the request body: %w", err)
	}
	sp := &spooled{f: f}
	q.spools = append(q.spools, sp)
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("idemimpl: spooling the request body: %w", err)
		}
		return nil, readError(err)
	}
	sp.size, sp.sum = n, hex.EncodeToString(h.Sum(nil))
	return sp, nil
}

func (sp *spooled) reader() io.Reader { return io.NewSectionReader(sp.f, 0, sp.size) }

// Close removes the temporary files of the request's streamed content. It
// may be called on a nil Request.
func (q *Request) Close() {
	if q == nil {
		return
	}
	for _, sp := range q.spools {
		sp.f.Close()
		os.Remove(sp.f.Name())
	}
	q.spools = nil
}

// readError classifies an error reading the request body: too large (413)
// or unreadable.
func readError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fmt.Errorf("%w: %w", idem.ErrBodyTooLarge, err)
	}
	return fmt.Errorf("%w: %w", idem.ErrBodyUnreadable, err)
}

// BodyStream is Body for an operation whose body is read as a stream (see
// idem.Engine.ServeStream): a binary body (AsBinary) and the file parts of
// a multipart/form-data body (AsMultipart) are copied to temporary files
// while they are hashed, never held whole in memory, and reach the handler
// as readers; the fingerprint covers their SHA-256. Another declared media
// type is read whole and decoded as Body does. Close removes the files.
func (q *Request) BodyStream(body io.Reader, b *Body, target any) {
	br := bufio.NewReader(body)
	if _, err := br.Peek(1); err != nil {
		if err != io.EOF {
			q.err = readError(err)
			return
		}
		if b.Required {
			q.out = append(q.out, idemproblem.Violation{In: "body", Pointer: "#", Rule: "required", Detail: "a request body is required"})
		}
		return
	}
	if q.err = q.coding(b); q.err != nil {
		return
	}
	ct := q.r.Header.Get("Content-Type")
	m, media, err := pickMedia(b, ct)
	if err != nil {
		q.err = err
		return
	}
	switch m.Decode {
	case AsBinary:
		sp, err := q.spool(br)
		if err != nil {
			q.err = err
			return
		}
		q.setBody(Value{Kind: KindString, Str: "sha-256:" + sp.sum}, media)
		if t, ok := target.(*io.Reader); ok {
			*t = sp.reader()
		}
		return
	case AsMultipart:
		q.multipart(br, m, media, ct, target)
		return
	}
	data, err := io.ReadAll(br)
	if err != nil {
		q.err = readError(err)
		return
	}
	q.Body(data, b, target)
}

// multipart decodes a multipart/form-data body: each part named by its
// Content-Disposition (in bracket notation, as a form's names), a part with
// a filename is a file (an idemtype.File in the typed request), the others are
// values typed by the schema as a form's.
func (q *Request) multipart(r io.Reader, m *Media, media, ct string, target any) {
	_, params, _ := mime.ParseMediaType(ct)
	boundary := params["boundary"]
	if boundary == "" {
		q.syntax(errors.New("multipart/form-data needs a boundary parameter in its Content-Type"))
		return
	}
	src := &trackedReader{r: r}
	mr := multipart.NewReader(src, boundary)
	root := &formNode{}
	files := map[string]*spooled{}
	jsonParts := map[string][]Value{}
	budget := int64(MaxPartMemory)
	values := newBudget(q.lim.MaxValues)
	for parts := 1; ; parts++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			if src.err != nil && src.err != io.EOF {
				q.err = readError(src.err)
			} else {
				q.syntax(fmt.Errorf("malformed multipart body: %w", err))
			}
			return
		}
		if parts > q.lim.MaxFields {
			q.syntax(&SyntaxError{Offset: -1, Rule: "maxFields", Msg: fmt.Sprintf("multipart body has more than %d parts", q.lim.MaxFields)})
			return
		}
		name := p.FormName()
		if name == "" {
			q.syntax(errors.New("a part has no name in its Content-Disposition (form-data; name=...)"))
			return
		}
		if err := checkName("part name", name, 1, &q.lim); err != nil {
			q.syntax(err)
			return
		}
		// The part's header is held (an idemtype.File keeps it): it counts
		// against the memory of the parts that are not files.
		for k, vs := range p.Header {
			for _, v := range vs {
				budget -= int64(len(k) + len(v) + 4)
			}
		}
		if budget < 0 {
			q.err = fmt.Errorf("%w: the parts that are not files and the headers of all parts exceed %d bytes", idem.ErrBodyTooLarge, MaxPartMemory)
			return
		}
		var val string
		jsonPart := slices.Contains(m.JSONParts, name)
		if p.FileName() != "" && !jsonPart { // a JSON part may come as a file (curl -F 'details=@d.json')
			sp, err := q.spool(p)
			if err != nil {
				q.err = err
				return
			}
			f := idemtype.File{Filename: p.FileName(), Header: p.Header, Size: sp.size, SHA256: sp.sum}
			tok, _ := f.MarshalText()
			val = string(tok)
			files[val] = sp
		} else {
			b, err := io.ReadAll(io.LimitReader(p, budget+1))
			if err != nil {
				q.err = readError(err)
				return
			}
			if budget -= int64(len(b)); budget < 0 {
				q.err = fmt.Errorf("%w: the parts that are not files and the headers of all parts exceed %d bytes", idem.ErrBodyTooLarge, MaxPartMemory)
				return
			}
			if !utf8.Valid(b) {
				q.syntax(fmt.Errorf("part %q is not UTF-8", name))
				return
			}
			val = string(b)
			if slices.Contains(m.FormParts, name) {
				// The part is a form: its members are the property's.
				form, err := parseForm(val, q.t.prop(m.Schema, name), &q.lim)
				if err != nil {
					q.syntax(fmt.Errorf("part %q: %w", name, err))
					return
				}
				if root.kid(name) != nil {
					q.syntax(fmt.Errorf("part %q is given more than once", name))
					return
				}
				c := root.child(name)
				c.vals, c.kids, c.index = form.vals, form.kids, form.index
				continue
			}
			if jsonPart {
				v, err := parseJSON(b, 1, q.lim.MaxDepth, values)
				if err != nil {
					q.out = append(q.out, partJSONError(name, err))
					return
				}
				jsonParts[name] = append(jsonParts[name], v)
				continue
			}
		}
		if err := root.put(name, val, q.t.schemaAt(m.Schema)); err != nil {
			q.syntax(errors.New("multipart " + err.Error()))
			return
		}
	}
	vd := &validator{t: q.t, in: "body", values: values}
	if err := splitUnexploded(root, m.Unexploded, values); err != nil {
		q.syntax(err)
		return
	}
	v := Value{Kind: KindObject}
	if len(root.kids) > 0 {
		v = vd.coerce(root, m.Schema)
	}
	if len(vd.out) == 0 && len(jsonParts) > 0 {
		vd.addJSONParts(&v, root, jsonParts, m.Schema)
	}
	if len(vd.out) == 0 {
		vd.validate(&v, m.Schema)
	}
	if len(vd.out) > 0 {
		q.out = append(q.out, vd.out...)
		return
	}
	// The handler sees the value with its defaults and without the
	// undeclared members its type drops, as for a JSON or form body (see
	// Body): an undeclared part, a file too, is dropped where an
	// undeclared JSON member would be, and is not part of the fingerprint.
	if q.t.handlerView(&v, m.Schema, true) {
		vd.validate(&v, m.Schema)
		if len(vd.out) > 0 {
			q.out = append(q.out, vd.out...)
			return
		}
	}
	n := len(q.out)
	q.unmarshal(vd, &v, 0, 0, target)
	if len(q.out) > n {
		return
	}
	used := map[string]bool{}
	if err := attachFiles(reflect.ValueOf(target), files, used); err != nil {
		q.out = append(q.out, idemproblem.Violation{In: "body", Pointer: "#", Rule: "type", Detail: err.Error()})
		return
	}
	kept := map[string]bool{}
	fileTokens(&v, files, kept)
	for tok := range files {
		if !used[tok] && kept[tok] { // a file where the typed request holds text
			f := idemtype.File{}
			_ = f.UnmarshalText([]byte(tok))
			q.out = append(q.out, idemproblem.Violation{In: "body", Pointer: "#", Rule: "type",
				Detail: fmt.Sprintf("file %q is sent where the schema declares no file (a part with a filename is a file)", f.Filename)})
			return
		}
	}
	q.setBody(v, media)
}

// fileTokens marks the files whose lines v still holds.
func fileTokens(v *Value, files map[string]*spooled, kept map[string]bool) {
	switch v.Kind {
	case KindString:
		if files[v.Str] != nil {
			kept[v.Str] = true
		}
	case KindArray:
		for i := range v.Items {
			fileTokens(&v.Items[i], files, kept)
		}
	case KindObject:
		for i := range v.Members {
			fileTokens(&v.Members[i].Value, files, kept)
		}
	}
}

// trackedReader remembers the error of the last read, to tell a body that
// could not be read from a malformed one.
type trackedReader struct {
	r   io.Reader
	err error
}

func (t *trackedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.err = err
	return n, err
}

var fileType = reflect.TypeFor[idemtype.File]()

// attachFiles gives every idemtype.File reachable from v the content of the
// part it was decoded from, and marks the parts used.
func attachFiles(v reflect.Value, files map[string]*spooled, used map[string]bool) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return attachFiles(v.Elem(), files, used)
		}
	case reflect.Struct:
		if v.Type() == fileType {
			f := v.Addr().Interface().(*idemtype.File)
			tok, _ := f.MarshalText()
			sp := files[string(tok)]
			if sp == nil {
				return fmt.Errorf("the value of a file member is not a file part")
			}
			used[string(tok)] = true
			f.Content = sp.reader()
			return nil
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				if err := attachFiles(v.Field(i), files, used); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if err := attachFiles(v.Index(i), files, used); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			e := reflect.New(iter.Value().Type()).Elem()
			e.Set(iter.Value())
			if err := attachFiles(e, files, used); err != nil {
				return err
			}
			v.SetMapIndex(iter.Key(), e)
		}
	}
	return nil
}

// partJSONError is the violation of a multipart part that should hold JSON
// and does not: it names the part and where in it the JSON breaks.
func partJSONError(name string, err error) idemproblem.Violation {
	msg := err.Error()
	var se *SyntaxError
	if errors.As(err, &se) {
		msg = se.Msg
		if se.Pointer != "" {
			msg += " at " + se.Pointer
		}
		if se.Offset >= 0 {
			msg += fmt.Sprintf(" (byte %d of the part)", se.Offset)
		}
	}
	if se != nil && se.Rule != "" {
		return idemproblem.Violation{In: "body", Pointer: "#/" + jsonkit.EscapeToken(name), Rule: se.Rule, Detail: fmt.Sprintf("part %q %s", name, msg)}
	}
	return idemproblem.Violation{In: "body", Pointer: "#/" + jsonkit.EscapeToken(name), Rule: "syntax",
		Detail: fmt.Sprintf("part %q is not valid JSON: %s", name, msg)}
}

// addJSONParts adds the parts parsed as JSON to v, the object the other
// parts coerced to: a property given once, or an array property one item a
// part (or one part holding the array).
func (vd *validator) addJSONParts(v *Value, root *formNode, parts map[string][]Value, idx int) {
	if v.Kind != KindObject {
		return // the validator reports the body's type
	}
	s := vd.schema(idx)
	names := make([]string, 0, len(parts))
	for name := range parts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		vals := parts[name]
		vd.push(name)
		if root.kid(name) != nil {
			vd.fail("syntax", fmt.Sprintf("part %q is given both as JSON and in [bracket] notation", name))
			vd.pop()
			return
		}
		var val Value
		ps := &Schema{}
		if p := findProp(s.Props, name); p != nil {
			ps = vd.schema(p.Schema)
		}
		switch {
		case ps.Types&TypeArray != 0 && ps.Types&^(TypeArray|TypeNull) == 0:
			if len(vals) == 1 && vals[0].Kind == KindArray && vd.schema(ps.Items).Types&TypeArray == 0 {
				val = vals[0]
			} else {
				val = Value{Kind: KindArray, Items: vals}
			}
		case len(vals) > 1:
			vd.fail("syntax", fmt.Sprintf("part %q is given %d times; it takes one value", name, len(vals)))
			vd.pop()
			return
		default:
			val = vals[0]
		}
		vd.pop()
		v.Members = append(v.Members, Member{Name: name, Value: val})
	}
	v.SortMembers()
}
