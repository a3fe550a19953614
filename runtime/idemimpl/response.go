package idemimpl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/idemgen/idemgen/runtime/idem"
)

// ErrNilResponse is returned for a Server method that returns a nil response
// and a nil error; it becomes a 500.
var ErrNilResponse = errors.New("server returned a nil response")

// UndeclaredResponse is the error for a Server method whose response has a
// type the generated encoder does not list: a struct embedding one of the
// operation's response types, say, which has its marker method but is not
// one of the declared responses.
func UndeclaredResponse(resp any) error {
	return fmt.Errorf("server returned a %T, which is not one of the operation's response types", resp)
}

// newResponse builds a response; headers are name, value pairs and a pair
// with an empty value is not sent.
func newResponse(status int, contentType string, body []byte, headers []string) *idem.Response {
	h := make(http.Header, 1+len(headers)/2)
	if contentType != "" {
		h["Content-Type"] = []string{contentType} // canonical: no Set
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			h.Set(headers[i], headers[i+1])
		}
	}
	return &idem.Response{Status: status, Header: h, Body: body}
}

// JSONResponse encodes body as JSON with the given status and content type.
// headers are name, value pairs; a header with an empty value is not sent.
func JSONResponse(status int, contentType string, body any, headers ...string) (*idem.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return newResponse(status, contentType, b, headers), nil
}

// RawResponse sends body as it is; headers as for JSONResponse.
func RawResponse(status int, contentType string, body []byte, headers ...string) (*idem.Response, error) {
	return newResponse(status, contentType, body, headers), nil
}

// EmptyResponse is a response without a body; headers as for JSONResponse.
func EmptyResponse(status int, headers ...string) (*idem.Response, error) {
	return newResponse(status, "", nil, headers), nil
}

// WriteResponse writes resp, the encoded response of an operation that does
// not go through the engine.
func WriteResponse(w http.ResponseWriter, resp *idem.Response) {
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.Status)
	w.Write(resp.Body)
}
