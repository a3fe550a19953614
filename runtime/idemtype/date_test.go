package idemtype_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemtype"
)

func TestDate(t *testing.T) {
	d, err := idemtype.ParseDate("2024-02-29")
	if err != nil || d != (idemtype.Date{Year: 2024, Month: time.February, Day: 29}) || d.String() != "2024-02-29" {
		t.Fatalf("ParseDate: %v %v", d, err)
	}
	for _, bad := range []string{"2023-02-29", "2024-2-29", "24-02-29", "2024-02-29T00:00:00Z", "", "2024-13-01"} {
		if _, err := idemtype.ParseDate(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	var v struct {
		D idemtype.Date  `json:"d"`
		P *idemtype.Date `json:"p,omitzero"`
	}
	if err := json.Unmarshal([]byte(`{"d":"2026-11-23"}`), &v); err != nil || v.D.Day != 23 || v.P != nil {
		t.Fatalf("unmarshal: %+v %v", v, err)
	}
	if out, _ := json.Marshal(v); string(out) != `{"d":"2026-11-23"}` {
		t.Errorf("marshal: %s", out)
	}
	if err := json.Unmarshal([]byte(`{"d":20261123}`), &v); err == nil {
		t.Error("a number decoded as a date")
	}
	if got := d.In(time.UTC); !got.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("In: %v", got)
	}
	if idemtype.DateOf(time.Date(2024, 3, 1, 23, 0, 0, 0, time.UTC)).Compare(d) != 1 || d.Compare(d) != 0 || !(idemtype.Date{}).IsZero() {
		t.Error("DateOf, Compare or IsZero")
	}
}
