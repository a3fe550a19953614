// Where the types of a split package go (Options.Split).

package model

// SplitModel is where the types go when the config splits them into
// packages of their own; types.gen.go then declares an alias of each.
type SplitModel struct {
	// SchemaTypes is the import path of the package of Types (the
	// schemas' types): internal/schematypes below the package.
	SchemaTypes string
	// OpTypes is the import path of the package of the operations'
	// request and response types, SharedResponses, and each operation's
	// response encoder (Operation.Encoder, exported there):
	// internal/optypes below the package.
	OpTypes string
	// Unimplemented is the import path of the package that declares
	// Unimplemented and its method per operation, of which the server
	// template then declares an alias: internal/unimplemented below the
	// package.
	Unimplemented string
}

// The directories of the split packages below the output, and their
// package names.
const (
	SchemaTypesDir   = "internal/schematypes"
	OpTypesDir       = "internal/optypes"
	UnimplementedDir = "internal/unimplemented"
)
