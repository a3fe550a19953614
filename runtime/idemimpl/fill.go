package idemimpl

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// A typed request is the validated Value unmarshalled (Request.unmarshal).
// For the shapes generated request types mostly have — structs of strings,
// numbers, booleans, enums, untyped values (any), and pointers, slices
// and string-keyed maps of them — the Value is
// copied into the typed value directly (a filler) instead of being encoded
// and decoded by encoding/json, which was a tenth of a plain request's
// instructions. A filler takes only what it can set exactly as
// encoding/json would from the Value's canonical encoding: a member it does
// not know, a null, a number its field cannot hold, or any type it was not
// built for, and it gives up, the target is cleared and encoding/json
// decodes it as before. TestFillMatchesUnmarshal holds the two to the same
// result.
//
// It is taken only where the validator has judged the whole value: the
// required members a generated type's UnmarshalJSON would check are the
// schema's, and the values an enum's would refuse are outside the schema's
// enum. So not for merge patches (validated as patches), and not in a table
// where any schema skips validation (the config's validation.skip).

// fillKind is what a filler sets.
type fillKind uint8

const (
	fillString fillKind = iota
	fillBool
	fillInt // Go int and intN; size says which
	fillFloat32
	fillFloat64
	fillPointer
	fillSlice
	fillStruct
	fillMap // map[string]T
	fillAny // interface{}: what encoding/json decodes with UseNumber
)

// filler sets a value of one Go type from a Value.
type filler struct {
	kind   fillKind
	size   uintptr      // fillInt: the integer's size in bytes
	typ    reflect.Type // fillPointer, fillSlice, fillMap: the type to allocate (the element, the slice, the map)
	elem   *filler      // fillPointer, fillSlice, fillMap
	esize  uintptr      // fillSlice: the element's size
	fields []fillField  // fillStruct, by JSON name
	byName map[string]int
	// must counts the struct fields without omitzero or omitempty:
	// those of a generated struct are its required members, which
	// its UnmarshalJSON refuses a value without.
	must int
}

// fillField is one struct field: its JSON name and offset.
type fillField struct {
	name string
	off  uintptr
	f    *filler
	must bool
}

// fillers caches the filler of each target type (a *filler, nil when the
// type has a shape fillers do not handle).
var fillers sync.Map // reflect.Type -> *filler

// fillerFor returns the filler of t, or nil.
func fillerFor(t reflect.Type) *filler {
	if f, ok := fillers.Load(t); ok {
		return f.(*filler)
	}
	// The fillers of one type's graph are built together: a recursive
	// type's refers to itself, and a part of a graph that fails fails
	// the whole.
	f := buildFiller(t, map[reflect.Type]*filler{})
	fillers.Store(t, f)
	return f
}

var (
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	validatorType       = reflect.TypeFor[interface{ Valid() bool }]()
	numberType          = reflect.TypeFor[json.Number]()
)

// decodesItself reports whether t has a method encoding/json would decode
// it with.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || pt.Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

func buildFiller(t reflect.Type, building map[reflect.Type]*filler) *filler {
	if f, ok := building[t]; ok {
		return f
	}
	switch t.Kind() {
	case reflect.String:
		// A type with its own UnmarshalJSON is taken only when it is a
		// generated enum (its method checks Valid, which the schema's
		// enum has checked).
		if decodesItself(t) && !(t.Name() != "" && t.Implements(validatorType)) || t == numberType {
			return nil // json.Number: encoding/json checks a string is a number
		}
		return &filler{kind: fillString}
	case reflect.Struct:
		return buildStruct(t, building)
	case reflect.Pointer:
		// Its methods are its element's (those with pointer receivers),
		// which decide.
		f := &filler{kind: fillPointer, typ: t.Elem()}
		building[t] = f
		if f.elem = buildFiller(t.Elem(), building); f.elem == nil {
			return nil
		}
		return f
	}
	if decodesItself(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return &filler{kind: fillBool}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &filler{kind: fillInt, size: t.Size()}
	case reflect.Float32:
		return &filler{kind: fillFloat32}
	case reflect.Float64:
		return &filler{kind: fillFloat64}
	case reflect.Interface:
		if t.NumMethod() > 0 {
			return nil
		}
		return &filler{kind: fillAny}
	case reflect.Map:
		// Keys of a string type without methods: encoding/json's
		// other keys (numbers, TextUnmarshalers) are converted.
		if k := t.Key(); k.Kind() != reflect.String || k.NumMethod() > 0 || reflect.PointerTo(k).NumMethod() > 0 {
			return nil
		}
		f := &filler{kind: fillMap, typ: t}
		building[t] = f
		if f.elem = buildFiller(t.Elem(), building); f.elem == nil {
			return nil
		}
		return f
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // base64 in encoding/json
		}
		f := &filler{kind: fillSlice, typ: t, esize: t.Elem().Size()}
		building[t] = f
		if f.elem = buildFiller(t.Elem(), building); f.elem == nil {
			return nil
		}
		return f
	}
	return nil // arrays, unsigned integers and the rest
}

// buildStruct builds the filler of a struct whose every field is exported
// and named by a json tag: the structs idemgen generates, whose only
// UnmarshalJSON checks required members (the fields tagged without
// omitzero; the filler gives up on a value that lacks one). A
// struct with other fields — a union's variants, the members a json tag
// cannot name, additional properties, time.Time, idemtype's — is not
// filled.
func buildStruct(t reflect.Type, building map[reflect.Type]*filler) *filler {
	f := &filler{kind: fillStruct}
	building[t] = f
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("json")
		if !ok || !sf.IsExported() || sf.Anonymous {
			return nil
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			return nil
		}
		must := true
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "":
			case "omitzero", "omitempty":
				must = false
			default:
				return nil // ",string" and the like
			}
		}
		ff := buildFiller(sf.Type, building)
		if ff == nil {
			return nil
		}
		f.fields = append(f.fields, fillField{name: name, off: sf.Offset, f: ff, must: must})
		if must {
			f.must++
		}
	}
	if len(f.fields) > 8 {
		f.byName = make(map[string]int, len(f.fields))
		for i, fl := range f.fields {
			if _, dup := f.byName[fl.name]; dup {
				return nil
			}
			f.byName[fl.name] = i
		}
	}
	return f
}

// field returns the field named name, or nil.
func (f *filler) field(name string) *fillField {
	if f.byName != nil {
		if i, ok := f.byName[name]; ok {
			return &f.fields[i]
		}
		return nil
	}
	for i := range f.fields {
		if f.fields[i].name == name {
			return &f.fields[i]
		}
	}
	return nil
}

// fill sets the value at p, which is its type's zero value, from v. It
// reports false when it cannot set it as encoding/json would; p may then
// be partly set.
func (f *filler) fill(p unsafe.Pointer, v *Value) bool {
	switch f.kind {
	case fillString:
		if v.Kind != KindString {
			return false
		}
		*(*string)(p) = v.Str
	case fillBool:
		if v.Kind != KindBool {
			return false
		}
		*(*bool)(p) = v.Bool
	case fillInt:
		if v.Kind != KindNumber || !v.isInt {
			return false
		}
		i := int64(v.bits)
		switch f.size {
		case 8:
			*(*int64)(p) = i
		case 4:
			if i < math.MinInt32 || i > math.MaxInt32 {
				return false
			}
			*(*int32)(p) = int32(i)
		case 2:
			if i < math.MinInt16 || i > math.MaxInt16 {
				return false
			}
			*(*int16)(p) = int16(i)
		case 1:
			if i < math.MinInt8 || i > math.MaxInt8 {
				return false
			}
			*(*int8)(p) = int8(i)
		default:
			return false
		}
	case fillFloat32, fillFloat64:
		if v.Kind != KindNumber {
			return false
		}
		// What encoding/json does with the canonical encoding's text.
		bits := 64
		if f.kind == fillFloat32 {
			bits = 32
		}
		x, err := strconv.ParseFloat(v.Str, bits)
		if err != nil {
			return false
		}
		if bits == 32 {
			*(*float32)(p) = float32(x)
		} else {
			*(*float64)(p) = x
		}
	case fillPointer:
		// No element kind takes a null, which encoding/json would
		// make a nil pointer: that is left to it.
		e := reflect.New(f.typ).UnsafePointer()
		if !f.elem.fill(e, v) {
			return false
		}
		*(*unsafe.Pointer)(p) = e
	case fillSlice:
		if v.Kind != KindArray {
			return false
		}
		s := reflect.MakeSlice(f.typ, len(v.Items), len(v.Items))
		base := s.UnsafePointer()
		for i := range v.Items {
			if !f.elem.fill(unsafe.Add(base, uintptr(i)*f.esize), &v.Items[i]) {
				return false
			}
		}
		reflect.NewAt(f.typ, p).Elem().Set(s)
	case fillMap:
		if v.Kind != KindObject {
			return false
		}
		m := reflect.MakeMapWithSize(f.typ, len(v.Members))
		et := f.typ.Elem()
		for i := range v.Members {
			e := reflect.New(et)
			if !f.elem.fill(e.UnsafePointer(), &v.Members[i].Value) {
				return false
			}
			m.SetMapIndex(reflect.ValueOf(v.Members[i].Name).Convert(f.typ.Key()), e.Elem())
		}
		reflect.NewAt(f.typ, p).Elem().Set(m)
	case fillAny:
		if v.Kind != KindNull {
			*(*any)(p) = untypedValue(v)
		}
	case fillStruct:
		if v.Kind != KindObject {
			return false
		}
		must := 0
		for i := range v.Members {
			m := &v.Members[i]
			fl := f.field(m.Name)
			if fl == nil || !fl.f.fill(unsafe.Add(p, fl.off), &m.Value) {
				return false
			}
			if fl.must {
				must++
			}
		}
		if must < f.must {
			// A required member the validator did not require (a
			// read-only one, say): the type's own check decides.
			return false
		}
	default:
		return false
	}
	return true
}

// fillTarget sets *target from v when a filler can; target is a non-nil
// pointer to a zero value. On false, *target is zero again.
func fillTarget(v *Value, target any) bool {
	rv := reflect.ValueOf(target)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	f := fillerFor(rv.Type().Elem())
	if f == nil {
		return false
	}
	if f.fill(rv.UnsafePointer(), v) {
		return true
	}
	rv.Elem().SetZero()
	return false
}

// untypedValue is what encoding/json decodes v into an interface as, with
// UseNumber (Unmarshal's choice for a type that holds one): a number is
// a json.Number of its canonical text.
func untypedValue(v *Value) any {
	switch v.Kind {
	case KindBool:
		return v.Bool
	case KindNumber:
		return json.Number(v.Str)
	case KindString:
		return v.Str
	case KindArray:
		a := make([]any, len(v.Items))
		for i := range v.Items {
			a[i] = untypedValue(&v.Items[i])
		}
		return a
	case KindObject:
		m := make(map[string]any, len(v.Members))
		for i := range v.Members {
			m[v.Members[i].Name] = untypedValue(&v.Members[i].Value)
		}
		return m
	}
	return nil
}
