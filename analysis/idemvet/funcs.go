package idemvet

import (
	"fmt"
	"go/types"
	"strings"
)

// defaultOutbound are the calls out of the process the outbound rule
// knows without -outbound.
var defaultOutbound = []string{
	"net/http.Get", "net/http.Head", "net/http.Post", "net/http.PostForm",
	"net/http.Client.Do", "net/http.Client.Get", "net/http.Client.Head", "net/http.Client.Post", "net/http.Client.PostForm",
	"net/http.RoundTripper.RoundTrip", "net/http.Transport.RoundTrip",
	"google.golang.org/grpc.ClientConn.Invoke", "google.golang.org/grpc.ClientConn.NewStream",
	"google.golang.org/grpc.ClientConnInterface.Invoke", "google.golang.org/grpc.ClientConnInterface.NewStream",
	"net/smtp.SendMail",
}

// defaultKeyed derive a downstream key from the request's without -keyed.
var defaultKeyed = []string{downstreamPath + ".Key", downstreamPath + ".KeyAs"}

var (
	outboundFlag = newFuncList(defaultOutbound)
	keyedFlag    = newFuncList(defaultKeyed)
)

// A funcList is a flag's list of functions: pkgpath.Func,
// pkgpath.Type.Method or pkgpath.Type (every method). Set replaces what a
// previous Set gave; the defaults stay.
type funcList struct {
	defaults []string
	extra    []string
	set      map[string]bool
}

func newFuncList(defaults []string) funcList {
	l := funcList{defaults: defaults}
	l.rebuild()
	return l
}

func (l *funcList) rebuild() {
	l.set = map[string]bool{}
	for _, s := range append(append([]string(nil), l.defaults...), l.extra...) {
		l.set[s] = true
	}
}

func (l *funcList) String() string { return strings.Join(l.extra, ",") }

func (l *funcList) Set(s string) error {
	var extra []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		slash := strings.LastIndex(f, "/")
		if !strings.Contains(f[slash+1:], ".") {
			return fmt.Errorf("%q: want pkgpath.Func, pkgpath.Type.Method or pkgpath.Type", f)
		}
		extra = append(extra, f)
	}
	l.extra = extra
	l.rebuild()
	return nil
}

// matches reports whether fn is in the list: by pkgpath.Func, or for a
// method by pkgpath.Type.Method or pkgpath.Type.
func (l *funcList) matches(fn *types.Func) bool {
	if fn.Pkg() == nil {
		return false
	}
	recv := fn.Signature().Recv()
	if recv == nil {
		return l.set[fn.Pkg().Path()+"."+fn.Name()]
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return false
	}
	typ := n.Obj().Pkg().Path() + "." + n.Obj().Name()
	return l.set[typ] || l.set[typ+"."+fn.Name()]
}

// isOutbound reports whether fn calls out of the process: in the
// -outbound list, or a method of a generated gRPC client (its last
// parameter ...grpc.CallOption).
func isOutbound(fn *types.Func) bool {
	if outboundFlag.matches(fn) {
		return true
	}
	sig := fn.Signature()
	if !sig.Variadic() || sig.Recv() == nil {
		return false
	}
	last, ok := sig.Params().At(sig.Params().Len() - 1).Type().(*types.Slice)
	return ok && isNamed(last.Elem(), "google.golang.org/grpc", "CallOption")
}
