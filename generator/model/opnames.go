// The names the generated code declares for each operation.

package model

// OperationNames are the names the generated code declares for an
// operation's own use, derived from its GoName through the namer (a clash
// numbers the later one, with a warning).
type OperationNames struct {
	Handler      string // handle<Op>: the handler's method serving it
	Decoder      string // decode<Op>Request: its request decoder
	Op           string // op<Op>: its idem.Operation
	Params       string // params<Op>: its parameters' table
	Body         string // body<Op>: its body's table
	Limits       string // limits<Op>: its request limits
	Marker       string // is<Op>Response: the method of its response types
	Encoder      string // encode<Op>Response: its response encoder (Encode<Op>Response in Split's OpTypes package)
	Segments     string // pathSegments<Op>: its split path segments
	ClientOp     string // clientOp<Op>: the client's idemclient.Operation ("" without a client)
	ClientReader string // read<Op>Response: the client's response reader ("" without a client)
}

// RequestType, ResponseType and friends name the operation's Go identifiers.
func (o *Operation) RequestType() string { return o.RequestTypeName }

func (o *Operation) ResponseType() string { return o.ResponseTypeName }

func (o *Operation) Handler() string { return o.Names.Handler }

func (o *Operation) Decoder() string { return o.Names.Decoder }

func (o *Operation) OpVar() string { return o.Names.Op }

func (o *Operation) ParamsVar() string { return o.Names.Params }

func (o *Operation) BodyVar() string { return o.Names.Body }

func (o *Operation) LimitsVar() string { return o.Names.Limits }

func (o *Operation) Marker() string { return o.Names.Marker }

func (o *Operation) Encoder() string { return o.Names.Encoder }

func (o *Operation) SegmentsVar() string { return o.Names.Segments }
