// Package jsonkit holds the JSON rules the runtime, the generator and the
// conformance checker share, each defined once: RFC 6901 JSON pointers
// (parse, escape, format, look up, remove), media types (the essence of a
// Content-Type, whether a media type is JSON, how a declared range matches)
// and RFC 8785 canonical JSON of a JSON text.
//
// It is internal to the idemgen module: generated code never imports it
// (it reaches these rules through runtime/idemimpl), so it can change
// without a support-package version.
package jsonkit
