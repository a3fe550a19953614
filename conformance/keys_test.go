package conformance

import (
	"strings"
	"testing"

	"github.com/idemgen/idemgen/generator/model"
	"github.com/idemgen/idemgen/runtime/idem"
)

// TestKeyFormats: for every key format the runtime lists, conformance mints
// a key the server accepts and a malformed and a too-long key it refuses;
// a format registered here that the runtime does not know ("uuidv9", as a
// format added to the runtime and not here would be) stops the operation's
// checks with an error that names it, never a UUID-shaped key sent as
// "malformed".
func TestKeyFormats(t *testing.T) {
	for _, f := range append(idem.PolicyEnums()["keyFormat"], "uuidv9") {
		p := &opRun{o: &model.Operation{ID: "op", Idempotent: true}}
		p.o.Policy.KeyFormat = f
		fresh := p.newKey()
		bad, err := badKeys(f, fresh)
		known := p.keyFormatKnown()
		if f == "uuidv9" {
			if err == nil || known == nil || !strings.Contains(known.Error(), `"uuidv9"`) || fresh != "" {
				t.Errorf("unknown format: key %q, badKeys %v, keyFormatKnown %v", fresh, err, known)
			}
			continue
		}
		if err != nil || known != nil {
			t.Fatalf("%s: badKeys %v, keyFormatKnown %v", f, err, known)
		}
		if _, err := idem.ParseKey(fresh, idem.KeyFormat(f)); err != nil {
			t.Errorf("%s: the fresh key %q is refused: %v", f, fresh, err)
		}
		for _, k := range []string{bad.wrong, bad.long} {
			if _, err := idem.ParseKey(k, idem.KeyFormat(f)); err == nil {
				t.Errorf("%s: the key sent as malformed, %q (%s / %s), is accepted", f, k, bad.what, bad.longWhat)
			}
		}
	}
}
