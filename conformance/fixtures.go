package conformance

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Fixture is what a run sends for one operation instead of what it derives
// from the spec.
type Fixture struct {
	// Body is the request body, as sent, in the operation's preferred
	// media type. It may hold placeholders that take a new value in every
	// request the run builds (every fixture: the first execution, each
	// parent resource, the concurrent burst), while a retry of that
	// request repeats its bytes:
	//
	//	{{uuid}}  a random UUID (version 4)
	//	{{rand}}  a random integer, 0 to 4294967295
	//	{{seq}}   1, 2, 3, ...: the how-many-th body of the run
	//	{{run}}   an identifier of the run (its start time, base 36)
	//
	// so that a service with a uniqueness rule (one account per email)
	// sees a new value where it wants one:
	// {"email": "user-{{seq}}-{{run}}@example.com"}.
	Body []byte
	// Params gives parameter values by name for this operation, before
	// Config.Params.
	Params map[string]string
}

// placeholder matches {{name}}, spaces allowed inside the braces.
var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z]+)\s*\}\}`)

var placeholders = map[string]bool{"uuid": true, "rand": true, "seq": true, "run": true}

// templated reports whether body holds placeholders, and refuses one of
// an unknown name.
func templated(body []byte) (bool, error) {
	found := false
	for _, m := range placeholder.FindAllSubmatch(body, -1) {
		if !placeholders[string(m[1])] {
			return false, fmt.Errorf("unknown placeholder %s (want {{uuid}}, {{rand}}, {{seq}} or {{run}})", m[0])
		}
		found = true
	}
	return found, nil
}

// bodies renders the placeholders of the bodies of one run.
type bodies struct {
	run string
	seq atomic.Int64
}

func newBodies() *bodies {
	return &bodies{run: strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// render gives every placeholder of tmpl its value for one request.
func (b *bodies) render(tmpl []byte) []byte {
	return placeholder.ReplaceAllFunc(tmpl, func(m []byte) []byte {
		switch string(bytes.TrimSpace(m[2 : len(m)-2])) {
		case "uuid":
			return []byte(uuid.NewString())
		case "rand":
			return strconv.AppendUint(nil, uint64(rand.Uint32()), 10)
		case "seq":
			return strconv.AppendInt(nil, b.seq.Add(1), 10)
		case "run":
			return []byte(b.run)
		}
		return m
	})
}

// prerequisiteError is a request that cannot be built because a request it
// depends on (creating the resource a path parameter names) did not
// succeed: the checks that need it are skipped, with this as the reason.
type prerequisiteError struct{ err error }

func (e *prerequisiteError) Error() string { return e.err.Error() }
func (e *prerequisiteError) Unwrap() error { return e.err }
