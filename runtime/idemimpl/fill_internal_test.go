package idemimpl

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemtype"
)

// Types of the shapes idemgen generates, with their generated methods.

type fillEnum string

func (v fillEnum) Valid() bool                   { return OneOf(v, "eur", "usd") }
func (v *fillEnum) UnmarshalJSON(b []byte) error { return UnmarshalEnum(b, v) }

type fillItem struct {
	Count *int64   `json:"count,omitzero"`
	Ratio *float32 `json:"ratio,omitzero"`
	Sku   string   `json:"sku"`
}

func (v *fillItem) UnmarshalJSON(b []byte) error {
	type plain fillItem
	return UnmarshalRequired(b, (*plain)(v), "sku")
}

type fillOrder struct {
	Amount   int64                `json:"amount"`
	Currency fillEnum             `json:"currency"`
	Express  *bool                `json:"express,omitzero"`
	Items    []fillItem           `json:"items,omitzero"`
	Next     *fillOrder           `json:"next,omitzero"`
	Note     *string              `json:"note,omitzero"`
	Price    *float64             `json:"price,omitzero"`
	Quantity int32                `json:"quantity"`
	Small    *int8                `json:"small,omitzero"`
	Tags     []string             `json:"tags,omitzero"`
	Grid     [][]float64          `json:"grid,omitzero"`
	Labels   map[string]string    `json:"labels,omitzero"`
	Attrs    map[string]any       `json:"attrs,omitzero"`
	Extra    any                  `json:"extra,omitzero"`
	ByName   map[string]*fillItem `json:"byName,omitzero"`
}

func (v *fillOrder) UnmarshalJSON(b []byte) error {
	type plain fillOrder
	return UnmarshalRequired(b, (*plain)(v), "amount", "currency", "quantity")
}

// fillJSON writes a random JSON value for a fillOrder, mostly one the
// schema would accept (the filler's premise), sometimes with what only
// encoding/json may judge: nulls, kinds a field cannot hold, numbers out of
// its range, unknown and missing members.
func fillJSON(r *rand.Rand, depth int) string {
	odd := func() bool { return r.IntN(12) == 0 }
	num := func() string {
		return []string{"0", "1", "-7", "12.0", "1e2", "2.5", "-0.0", "1e400", "9007199254740993", "18446744073709551617",
			"127", "128", "-129", "2147483647", "2147483648", "3.4e38", "3.5e38", "1e-50", "0.1"}[r.IntN(19)]
	}
	// integer is mostly one an int32 holds.
	integer := func() string {
		if r.IntN(5) == 0 {
			return num()
		}
		return []string{"0", "1", "-7", "12.0", "1e2", "0.5e1", "-2147483648", "2147483647"}[r.IntN(8)]
	}
	str := func() string {
		return []string{`""`, `"x"`, `"é\u00e9"`, `"\ud83d\ude00"`, `"a\"b\\c"`, `"\u0000"`}[r.IntN(6)]
	}
	any := func() string {
		return []string{"null", "true", "false", num(), str(), "[]", "{}", `[1,"a"]`, `{"a":1}`}[r.IntN(9)]
	}
	var m []string
	add := func(name, val string) {
		if odd() {
			val = any()
		}
		m = append(m, fmt.Sprintf("%q:%s", name, val))
	}
	if !odd() {
		add("amount", integer())
	}
	if !odd() {
		// Any string is one of the enum's: the schema's enum refuses the
		// others before a typed value is made.
		cur := []string{`"eur"`, `"usd"`}[r.IntN(2)]
		if odd() {
			cur = []string{"null", "1", "true", "[]", "{}"}[r.IntN(5)]
		}
		m = append(m, `"currency":`+cur)
	}
	if !odd() {
		add("quantity", integer())
	}
	if r.IntN(2) == 0 {
		add("express", []string{"true", "false"}[r.IntN(2)])
	}
	if r.IntN(2) == 0 {
		var items []string
		for range r.IntN(4) {
			var im []string
			if !odd() {
				im = append(im, `"sku":`+str())
			}
			if r.IntN(2) == 0 {
				im = append(im, `"count":`+integer())
			}
			if r.IntN(2) == 0 {
				im = append(im, `"ratio":`+num())
			}
			if odd() {
				im = append(im, `"SKU":"x"`)
			}
			items = append(items, "{"+strings.Join(im, ",")+"}")
		}
		add("items", "["+strings.Join(items, ",")+"]")
	}
	if depth < 2 && r.IntN(3) == 0 {
		add("next", fillJSON(r, depth+1))
	}
	if r.IntN(2) == 0 {
		add("note", str())
	}
	if r.IntN(2) == 0 {
		add("price", num())
	}
	if r.IntN(2) == 0 {
		add("small", integer())
	}
	if r.IntN(2) == 0 {
		add("tags", "["+strings.Repeat(str()+",", r.IntN(3))+str()+"]")
	}
	if r.IntN(3) == 0 {
		add("grid", "[["+num()+"],[],["+num()+","+num()+"]]")
	}
	if r.IntN(3) == 0 {
		add("labels", `{"a":`+str()+`,"b":`+str()+`}`)
	}
	if r.IntN(3) == 0 {
		add("attrs", `{"n":`+num()+`,"x":`+any()+`,"y":[`+any()+`,{"z":`+num()+`}]}`)
	}
	if r.IntN(3) == 0 {
		add("extra", any())
	}
	if r.IntN(4) == 0 {
		add("byName", `{"one":{"sku":`+str()+`},"two":{"sku":`+str()+`,"count":`+integer()+`}}`)
	}
	if odd() {
		add("Amount", num()) // a name encoding/json matches case-insensitively
	}
	if odd() {
		add("other", any())
	}
	r.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
	return "{" + strings.Join(m, ",") + "}"
}

// TestFillMatchesUnmarshal: wherever a filler sets a typed value, it is
// the value encoding/json decodes from the canonical encoding, through the
// type's own UnmarshalJSON; where it gives up, the target is zero again.
// Over 20 000 random values of a generated shape, both outcomes occur.
func TestFillMatchesUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	filled, gaveUp := 0, 0
	for range 20000 {
		text := fillJSON(r, 0)
		v, err := ParseJSON([]byte(text))
		if err != nil {
			continue // a number past float64's range, say
		}
		var got, want fillOrder
		ok := fillTarget(&v, &got)
		err = want.UnmarshalJSON(AppendJSON(nil, &v, nil))
		switch {
		case !ok:
			gaveUp++
			if !reflect.DeepEqual(got, fillOrder{}) {
				t.Fatalf("%s: the filler gave up and left %+v", text, got)
			}
		case err != nil:
			t.Fatalf("%s: filled %+v; encoding/json refuses it: %v", text, got, err)
		case !reflect.DeepEqual(got, want):
			t.Fatalf("%s: filled\n%s\nencoding/json decodes\n%s", text, dump(got), dump(want))
		default:
			filled++
		}
	}
	t.Logf("filled %d, gave up on %d", filled, gaveUp)
	if filled < 1000 || gaveUp < 1000 {
		t.Errorf("filled %d, gave up on %d: want both at least 1000", filled, gaveUp)
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}

// TestFillerShapes: the filler takes the shapes it sets exactly, and no
// type it cannot know the decoding of.
func TestFillerShapes(t *testing.T) {
	type union struct {
		A *string
		B *int64
	}
	type named struct {
		A string `json:"a"`
		B string `json:"-"`
	}
	type quoted struct {
		N int64 `json:"n,string"`
	}
	type untagged struct {
		A string
	}
	type embedded struct {
		fillItem `json:"item"`
	}
	type withDecodes struct {
		D fillDecodes `json:"d"`
	}
	type withTimes struct {
		T []time.Time `json:"t"`
	}
	type recursive struct {
		Children []recursive `json:"children,omitzero"`
		Name     string      `json:"name"`
	}
	for _, c := range []struct {
		typ  reflect.Type
		want bool
	}{
		{reflect.TypeFor[fillOrder](), true},
		{reflect.TypeFor[recursive](), true},
		{reflect.TypeFor[*string](), true},
		{reflect.TypeFor[[]fillEnum](), true},
		{reflect.TypeFor[map[string]string](), true},
		{reflect.TypeFor[map[string]any](), true},
		{reflect.TypeFor[any](), true},
		{reflect.TypeFor[map[int]string](), false},
		{reflect.TypeFor[map[fillEnum]string](), false},
		{reflect.TypeFor[map[string][]byte](), false},
		{reflect.TypeFor[error](), false},
		{reflect.TypeFor[[]byte](), false},
		{reflect.TypeFor[[16]byte](), false},
		{reflect.TypeFor[uint64](), false},
		{reflect.TypeFor[time.Time](), false},
		{reflect.TypeFor[idemtype.Date](), false},
		{reflect.TypeFor[idemtype.Nullable[string]](), false},
		{reflect.TypeFor[union](), false},
		{reflect.TypeFor[named](), false},
		{reflect.TypeFor[quoted](), false},
		{reflect.TypeFor[untagged](), false},
		{reflect.TypeFor[embedded](), false},
		{reflect.TypeFor[json.RawMessage](), false},
		{reflect.TypeFor[json.Number](), false},
		{reflect.TypeFor[withDecodes](), false},
		{reflect.TypeFor[withTimes](), false},
	} {
		if got := fillerFor(c.typ) != nil; got != c.want {
			t.Errorf("%v: filled %v, want %v", c.typ, got, c.want)
		}
	}
}

// fillDecodes has an UnmarshalJSON that is no enum's.
type fillDecodes string

func (d *fillDecodes) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, (*string)(d)) }
