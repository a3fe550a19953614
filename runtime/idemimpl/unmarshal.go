package idemimpl

import (
	"encoding/json"
	"sync/atomic"
	"unsafe"
)

// unmarshal decodes target from v's canonical encoding. An error here means
// the generated type and the schema disagree; it is reported as a violation
// at the JSON pointer, without Go's type names. For a body, schema is the
// one its validation used (0 for a parameter) and size the body's length,
// which the encoding's is close to.
func (q *Request) unmarshal(vd *validator, v *Value, schema, size int, target any) {
	if target == nil {
		return
	}
	if vd.mode != modePatch && !q.t.skips && fillTarget(v, target) {
		return
	}
	b := AppendJSON(make([]byte, 0, size), v, nil)
	var err error
	if u, ok := target.(json.Unmarshaler); ok {
		// A generated type's own method, without a decoder around it to
		// find where the value ends (b is one value, well formed). When
		// the validator checked the object's required members against
		// schema, the method's own check of them is skipped (below).
		if s := q.t.schemaAt(schema); schema > 0 && v.Kind == KindObject && vd.mode != modePatch && !s.NoValidate {
			q.validated = validatedValue{data: &b[0], schema: s, t: q.t}
			q.validated.register()
			err = u.UnmarshalJSON(b)
			q.validated.unregister()
		} else {
			err = u.UnmarshalJSON(b)
		}
	} else {
		err = Unmarshal(b, target)
	}
	if err != nil {
		vd.fail("type", unmarshalError(err).Error())
		q.out = append(q.out, vd.out[len(vd.out)-1])
	}
}

// A typed request is unmarshalled from the canonical encoding of a value
// the validator has accepted (Request.unmarshal), through its type's
// UnmarshalJSON, which checks the type's required members (CheckRequired)
// by scanning the encoding once more. The validator has checked the
// members its schema requires already, so while the type decodes, the
// encoding is registered here with that schema, and CheckRequired skips
// the names the schema required. A registration is found only by the
// address of the encoding it names, which is alive and unchanged for as
// long as it is registered; two requests sharing a slot only cost the
// later one's lookup its scan.

// validatedValue is one registration: the encoding's first byte and the
// schema the value was validated against.
type validatedValue struct {
	data   *byte
	schema *Schema
	t      *Schemas
}

// validatedSlots hold the registrations of requests being unmarshalled,
// by the encoding's address.
var validatedSlots [64]atomic.Pointer[validatedValue]

func validatedSlot(data *byte) *atomic.Pointer[validatedValue] {
	return &validatedSlots[(uintptr(unsafe.Pointer(data))>>4)%uintptr(len(validatedSlots))]
}

// register makes v findable by CheckRequired, until unregister.
func (v *validatedValue) register() { validatedSlot(v.data).Store(v) }

func (v *validatedValue) unregister() { validatedSlot(v.data).CompareAndSwap(v, nil) }

// validatedRequired reports whether the validator has checked that the
// object encoded in b has every one of names: b is a registered encoding
// and each name is a property its schema requires (a read-only one is not
// required of a request, so it does not count).
func validatedRequired(b []byte, names []string) bool {
	if len(b) == 0 {
		return false
	}
	v := validatedSlot(&b[0]).Load()
	if v == nil || v.data != &b[0] {
		return false
	}
	for _, n := range names {
		p := findProp(v.schema.Props, n)
		if p == nil || !p.Required || v.t.List[p.Schema].ReadOnly {
			return false
		}
	}
	return true
}
