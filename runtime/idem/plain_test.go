package idem_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

// logLines decodes the JSON log lines the engine wrote, keeping
// "idem: request" lines.
func logLines(t *testing.T, rec *recorder) []map[string]any {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(rec.logs.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["msg"] == "idem: request" {
			lines = append(lines, m)
		}
	}
	rec.logs.Reset()
	return lines
}

// TestRequestLogAtInfo: with a slog handler at its default level (Info),
// the engine logs one line per request — a keyed POST executed and
// replayed, a GET through Engine.Plain, a GET that fails — with the
// operation, outcome, status, duration and the key's hash, never the key;
// observers and Hooks.OnOutcome see the GET too.
func TestRequestLogAtInfo(t *testing.T) {
	rec := &recorder{}
	cfg := rec.config()
	cfg.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{mu: &rec.mu, w: &rec.logs}, nil)) // level Info
	e := newEnv(t, testPolicy(idem.ModeAtomic), cfg)

	key := newKey()
	if r := e.post(key, payReq{Amount: 5}); r.Status != 201 {
		t.Fatalf("POST: %d", r.Status)
	}
	if r := e.post(key, payReq{Amount: 5}); r.Status != 201 {
		t.Fatalf("POST again: %d", r.Status)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /things/{id}", func(w http.ResponseWriter, r *http.Request) {
		w, r, done := e.eng.Plain(w, r, "getThing")
		defer done()
		if r.Context().Value(ctxMark{}) != "observed" {
			t.Error("the handler does not run in the observer's context")
		}
		if r.PathValue("id") == "broken" {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, `{"id":"1"}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, path := range []string{"/things/1", "/things/broken"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	lines := logLines(t, rec)
	type want struct {
		op, outcome, level string
		status             float64
		keyed              bool
	}
	wants := []want{
		{e.op.ID, "executed", "INFO", 201, true},
		{e.op.ID, "replayed", "INFO", 201, true},
		{"getThing", "not_idempotent", "INFO", 200, false},
		{"getThing", "failed", "ERROR", 500, false},
	}
	if len(lines) != len(wants) {
		t.Fatalf("%d request lines, want %d: %v", len(lines), len(wants), lines)
	}
	for i, w := range wants {
		l := lines[i]
		_, hasHash := l["key_hash"]
		_, hasDuration := l["duration"]
		if l["operation"] != w.op || l["outcome"] != w.outcome || l["level"] != w.level || l["status"] != w.status || hasHash != w.keyed || !hasDuration {
			t.Errorf("line %d: %v; want %+v", i, l, w)
		}
		if b, _ := json.Marshal(l); strings.Contains(string(b), key) {
			t.Errorf("line %d holds the key: %s", i, b)
		}
	}
	events, outcomes, _ := rec.take()
	if got := strings.Join(events, ","); !strings.HasSuffix(got, "request,done:not_idempotent,request,done:failed") {
		t.Errorf("observer events end %s; want the two GETs", got)
	}
	if len(outcomes) != 4 || outcomes[2].Label() != "not_idempotent" || outcomes[2].Bytes != len(`{"id":"1"}`) || outcomes[3].Status != 500 {
		t.Errorf("OnOutcome saw %+v", outcomes)
	}
	var nilEngine *idem.Engine
	w := httptest.NewRecorder()
	if gw, _, done := nilEngine.Plain(w, httptest.NewRequest("GET", "/", nil), "x"); gw != w {
		t.Error("a nil engine's Plain wraps the writer")
	} else {
		done()
	}
}

// TestPlainErrorLoggedWithOperation: a GET through Engine.Plain whose
// Server method fails is answered by WriteError with a 500; its cause is
// on the request's one log line, beside the operation, not on a line of
// its own that names no operation. With Hooks.OnError, the hook gets the
// error with the operation too.
func TestPlainErrorLoggedWithOperation(t *testing.T) {
	for _, hooked := range []bool{false, true} {
		t.Run(map[bool]string{false: "logged", true: "hooked"}[hooked], func(t *testing.T) {
			var mu sync.Mutex
			logs := &logBuffer{}
			var hookOps []string
			cfg := idem.Config{Logger: logs.logger()}
			if hooked {
				cfg.Hooks.OnError = func(_ context.Context, op *idem.Operation, err error) {
					mu.Lock()
					defer mu.Unlock()
					if op == nil {
						hookOps = append(hookOps, "<nil>: "+err.Error())
						return
					}
					hookOps = append(hookOps, op.ID+": "+err.Error())
				}
			}
			e := newEnv(t, testPolicy(idem.ModeAtomic), cfg)
			mux := http.NewServeMux()
			mux.HandleFunc("GET /things/{id}", func(w http.ResponseWriter, r *http.Request) {
				w, r, done := e.eng.Plain(w, r, "getThing")
				defer done()
				e.eng.WriteError(w, r, idem.ProfileDefault, errors.New("load thing: the secret cause"))
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/things/1")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 500 {
				t.Fatalf("GET: %d, want 500", resp.StatusCode)
			}
			mu.Lock()
			defer mu.Unlock()
			if others := logs.lines(t, "idem: request failed"); len(others) != 0 {
				t.Errorf("a line of its own for the error: %v", others)
			}
			lines := logs.lines(t, "idem: request")
			if len(lines) != 1 || lines[0]["operation"] != "getThing" || lines[0]["status"] != float64(500) {
				t.Fatalf("log lines %v; want the request's one line, with the operation", lines)
			}
			if cause, _ := lines[0]["error"].(string); cause != "load thing: the secret cause" {
				t.Errorf("the request's line carries error %q, want the cause", cause)
			}
			if hooked && (len(hookOps) != 1 || hookOps[0] != "getThing: load thing: the secret cause") {
				t.Errorf("OnError saw %q; want the cause with the operation", hookOps)
			}
		})
	}
}
