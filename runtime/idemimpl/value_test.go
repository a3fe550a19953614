package idemimpl_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gowebpki/jcs"

	"github.com/idemgen/idemgen/runtime/idemimpl"
)

func TestParseNumber(t *testing.T) {
	tests := []struct {
		lit, text string
		isInt     bool
		err       string
	}{
		{"0", "0", true, ""},
		{"-0", "0", true, ""},
		{"-0.0e5", "0", true, ""},
		{"2", "2", true, ""},
		{"2.0", "2", true, ""},
		{"0.2e1", "2", true, ""},
		{"200e-2", "2", true, ""},
		{"1E2", "100", true, ""},
		{"-17", "-17", true, ""},
		{"9007199254740993", "9007199254740993", true, ""},
		{"9007199254740992", "9007199254740992", true, ""},
		{"9223372036854775807", "9223372036854775807", true, ""},
		{"-9223372036854775808", "-9223372036854775808", true, ""},
		{"9223372036854775808", "9223372036854775808", false, ""}, // past int64: every digit kept, not a float64's
		{"18446744073709551617", "18446744073709551617", false, ""},
		{"18446744073709551616", "18446744073709551616", false, ""},
		{"-18446744073709551617", "-18446744073709551617", false, ""},
		{"1.8446744073709551617e19", "18446744073709551617", false, ""},
		{"184467440737095516170e-1", "18446744073709551617", false, ""},
		{"999999999999999999999", "999999999999999999999", false, ""}, // 21 digits: as ECMAScript, in digits
		{"123456789012345678901234", "1.23456789012345678901234e+23", false, ""},
		{"1230000000000000000000000", "1.23e+24", false, ""},
		{"1e19", "10000000000000000000", false, ""},
		{"1.5", "1.5", false, ""},
		{"0.1", "0.1", false, ""},
		{"0.10000000000000001", "0.1", false, ""}, // the same float64
		{"1e300", "1e+300", false, ""},
		{"1e400", "", false, "outside the range"},
		{"1e-400", "", false, "outside the range"},
		{"1e99999999999999999999", "", false, "outside the range"},
		{"0e99999999999999999999", "0", true, ""},
		{"01", "", false, "not a JSON number"},
		{"+1", "", false, "not a JSON number"},
		{"1.", "", false, "not a JSON number"},
		{".5", "", false, "not a JSON number"},
		{"1e", "", false, "not a JSON number"},
		{"0x10", "", false, "not a JSON number"},
		{"NaN", "", false, "not a JSON number"},
		{strings.Repeat("1", 401), "", false, "more than 400"},
	}
	for _, tt := range tests {
		n, err := idemimpl.ParseNumber(tt.lit)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseNumber(%q) = %+v, %v; want error containing %q", tt.lit, n, err, tt.err)
			}
			continue
		}
		if err != nil || n.Text != tt.text || n.IsInt != tt.isInt {
			t.Errorf("ParseNumber(%q) = %+v, %v; want text %q, int %v", tt.lit, n, err, tt.text, tt.isInt)
		}
	}
	n, _ := idemimpl.ParseNumber("9007199254740993")
	if n.Int != 9007199254740993 {
		t.Errorf("9007199254740993 kept as %d", n.Int)
	}
}

func TestParseJSONStrict(t *testing.T) {
	tests := []struct{ body, err string }{
		{`{"amount":1,"amount":2}`, `duplicate member "amount"`},
		{`{"a":{"b":1,"b":1}}`, `at /a: duplicate member "b"`},
		{"{\"a\":\"\xff\"}", "invalid UTF-8"},
		{`{"a":1} {"a":2}`, "after the JSON value"},
		{`{"a":1`, "unexpected end"},
		{`[1,]`, "invalid character"},
		{strings.Repeat("[", 33) + strings.Repeat("]", 33), "nests deeper than 32 levels"},
		{strings.Repeat("[0,", 10000) + "0" + strings.Repeat("]", 10000), "nests deeper"},
		{"[" + strings.Repeat("0,", 10000) + "0]", "holds more than 10000 values"},
		{`{"n":1e400}`, "at /n: number is outside the range"},
	}
	for _, tt := range tests {
		_, err := idemimpl.ParseJSON([]byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ParseJSON(%.40q) error %v; want one containing %q", tt.body, err, tt.err)
		}
	}
	// Case variants are distinct members: it is the schema that refuses them.
	v, err := idemimpl.ParseJSON([]byte(`{"amount":1,"AMOUNT":2}`))
	if err != nil || len(v.Members) != 2 {
		t.Fatalf("case variants: %+v, %v", v, err)
	}
}

func canon(t *testing.T, body string, exclude ...string) string {
	t.Helper()
	v, err := idemimpl.ParseJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := idemimpl.ParsePointers(exclude...)
	if err != nil {
		t.Fatal(err)
	}
	return string(idemimpl.AppendJSON(nil, &v, ps))
}

func TestAppendJSON(t *testing.T) {
	got := canon(t, ` { "b" : [ 1.0, "x\u00e9\n", true, null ], "a": {"z": 2e0, "\u20ac": 1, "\ud83d\ude00": 0, "\ufb33": 0} } `)
	want := "{\"a\":{\"z\":2,\"\u20ac\":1,\"\U0001F600\":0,\"\ufb33\":0},\"b\":[1,\"x\u00e9\\n\",true,null]}"
	if got != want {
		t.Errorf("canonical\n got %s\nwant %s", got, want)
	}
	got = canon(t, `{"a":{"x":1,"y":2},"l":[0,1,2],"k~/":"x"}`, "/a/x", "/l/1", "/missing/deep", "/k~0~1")
	if want := `{"a":{"y":2},"l":[0,2]}`; got != want {
		t.Errorf("with exclusions\n got %s\nwant %s", got, want)
	}
	if canon(t, `9007199254740993`) == canon(t, `9007199254740992`) {
		t.Error("integers past 2^53 canonicalise to the same text")
	}
}

// TestAppendJSONIsRFC8785 checks the canonical form against an RFC 8785
// implementation where RFC 8785 and ours agree: numbers that are not
// integers past 2^53.
func TestAppendJSONIsRFC8785(t *testing.T) {
	for _, body := range []string{
		`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
		`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
		`[56,{"d":true,"10":null,"1":[]}]`,
		`{"a":-0,"b":1e21,"c":1e-7,"d":1234567890123456}`,
	} {
		want, err := jcs.Transform([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got := canon(t, body); got != string(want) {
			t.Errorf("canonical of %s\n got %s\nwant %s", body, got, want)
		}
	}
}

// FuzzParseJSON: what ParseJSON accepts, AppendJSON encodes to a fixed
// point, which agrees with RFC 8785 (gowebpki/jcs) wherever every number is
// safe as a double.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"amount":1,"AMOUNT":2}`, `9007199254740993`, `{"a":[1,2.5,"x"],"b":null}`, `"\ud83d\ude00"`, `{"\u20ac":1,"\ufb33":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := idemimpl.ParseJSON(body)
		if err != nil {
			return
		}
		c1 := idemimpl.AppendJSON(nil, &v, nil)
		v2, err := idemimpl.ParseJSON(c1)
		if err != nil {
			t.Fatalf("canonical form %s does not parse: %v", c1, err)
		}
		if c2 := idemimpl.AppendJSON(nil, &v2, nil); !bytes.Equal(c1, c2) {
			t.Fatalf("not a fixed point: %s then %s", c1, c2)
		}
		if safeNumbers(&v) {
			want, err := jcs.Transform(body)
			if err == nil && !bytes.Equal(c1, want) {
				t.Fatalf("canonical %s, RFC 8785 %s", c1, want)
			}
		}
	})
}

func safeNumbers(v *idemimpl.Value) bool {
	switch v.Kind {
	case idemimpl.KindNumber:
		return math.Abs(v.Num().Float) < 1<<53
	case idemimpl.KindArray:
		for i := range v.Items {
			if !safeNumbers(&v.Items[i]) {
				return false
			}
		}
	case idemimpl.KindObject:
		for i := range v.Members {
			if !safeNumbers(&v.Members[i].Value) {
				return false
			}
		}
	}
	return true
}

// TestSortMembersUTF16: members are sorted by UTF-16 code units (RFC 8785),
// which differs from byte order where a character past U+FFFF (a surrogate
// pair, from 0xD800) meets one from U+E000 to U+FFFF, and Member finds
// each by that order; names share prefixes of every kind.
func TestSortMembersUTF16(t *testing.T) {
	alphabet := []string{"a", "b", "é", "\u00ff", "\u0800", "\ue000", "\uffee", "😀", "\U0010ffff", "~"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		seen := map[string]bool{}
		var v idemimpl.Value
		v.Kind = idemimpl.KindObject
		for range 12 {
			var b strings.Builder
			for range 1 + rng.IntN(4) {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			if name := b.String(); !seen[name] {
				seen[name] = true
				v.Members = append(v.Members, idemimpl.Member{Name: name, Value: idemimpl.Value{Kind: idemimpl.KindString, Str: name}})
			}
		}
		v.SortMembers()
		for i := 1; i < len(v.Members); i++ {
			a, b := utf16.Encode([]rune(v.Members[i-1].Name)), utf16.Encode([]rune(v.Members[i].Name))
			if slices.Compare(a, b) >= 0 {
				t.Fatalf("%q sorted before %q", v.Members[i-1].Name, v.Members[i].Name)
			}
		}
		for name := range seen {
			if m := v.Member(name); m == nil || m.Str != name {
				t.Fatalf("Member(%q) = %v", name, m)
			}
		}
		if v.Member("zz-absent") != nil {
			t.Fatal("Member found an absent name")
		}
	}
}

// TestAppendJSONStrings: strings and member names are written as
// jsontext.AppendQuote writes them (RFC 8785's escapes), every ASCII byte
// and some beyond.
func TestAppendJSONStrings(t *testing.T) {
	var ss []string
	for c := range 128 {
		ss = append(ss, "a"+string(rune(c))+"b")
	}
	ss = append(ss, "", "plain", "é", "\u2028", "😀", `"quoted"`, `back\slash`, "<&>")
	for _, s := range ss {
		v := idemimpl.Value{Kind: idemimpl.KindObject, Members: []idemimpl.Member{{Name: s, Value: idemimpl.Value{Kind: idemimpl.KindString, Str: s}}}}
		q, _ := jsontext.AppendQuote(nil, s)
		if got, want := string(idemimpl.AppendJSON(nil, &v, nil)), "{"+string(q)+":"+string(q)+"}"; got != want {
			t.Errorf("AppendJSON(%q) = %s, want %s", s, got, want)
		}
	}
}
