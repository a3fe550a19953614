package idem_test

import (
	"context"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestRegionConfig: idem.New refuses a Region whose names break the rules,
// with an error of package idem. (The region tests that need databases set
// up by schema.SetupRegion are TestRegions, in package schema.)
func TestRegionConfig(t *testing.T) {
	for _, r := range []idem.Region{
		{Name: "", Peers: []string{"a"}},
		{Name: "B", Peers: []string{"a"}},
		{Name: "b", Peers: nil},
		{Name: "b", Peers: []string{"b"}},
		{Name: "b", Peers: []string{"a-1"}},
		{Name: strings.Repeat("x", 31), Peers: []string{"a"}},
	} {
		if _, err := idem.New(nil, idem.Config{Region: &r, Shard: func(context.Context, string) (idem.DB, error) { return nil, nil }}); err == nil {
			t.Errorf("Region %+v accepted", r)
		} else if !strings.HasPrefix(err.Error(), "idem: ") {
			t.Errorf("error %q does not start with idem: ", err)
		}
	}
}
