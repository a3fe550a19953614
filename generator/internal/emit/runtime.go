package emit

// The one table of the runtime's constants as generated code names them.
// The model holds them as the runtime's own typed values (idemimpl.Style,
// idemimpl.Decoding, idemimpl.SchemeKind, ...), so the builder and
// conformance switch on Go constants the compiler checks; only the emitter
// spells them, through this table. A runtime constant renamed fails the
// generator's build (the key names it); a name mistyped here fails
// TestRuntimeNames, which reads the runtime's source.

import (
	"fmt"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// The import paths of the packages generated code uses beside the
// standard library.
const (
	idemPkg = "github.com/idemgen/idemgen/runtime/idem"
	typePkg = "github.com/idemgen/idemgen/runtime/idemtype"
	implPkg = "github.com/idemgen/idemgen/runtime/idemimpl"
	uuidPkg = "github.com/google/uuid"
)

// goIdent is a Go identifier: the import path of its package ("" for a
// predeclared one) and its name.
type goIdent struct{ path, name string }

// additional is idemimpl.Schema.AdditionalProperties when it is one of
// idemimpl's untyped constants (NoAdditional, AnyAdditional), not an index.
type additional int

func implIdent(name string) goIdent { return goIdent{implPkg, name} }

func idemIdent(name string) goIdent { return goIdent{idemPkg, name} }

// runtimeNames maps each runtime constant the model holds to the
// identifier generated code names it by.
var runtimeNames = map[any]goIdent{
	idemimpl.StyleSimple:         implIdent("StyleSimple"),
	idemimpl.StyleForm:           implIdent("StyleForm"),
	idemimpl.StyleLabel:          implIdent("StyleLabel"),
	idemimpl.StyleMatrix:         implIdent("StyleMatrix"),
	idemimpl.StyleSpaceDelimited: implIdent("StyleSpaceDelimited"),
	idemimpl.StylePipeDelimited:  implIdent("StylePipeDelimited"),
	idemimpl.StyleDeepObject:     implIdent("StyleDeepObject"),
	idemimpl.StyleJSON:           implIdent("StyleJSON"),

	idemimpl.AsJSON:       implIdent("AsJSON"),
	idemimpl.AsMergePatch: implIdent("AsMergePatch"),
	idemimpl.AsForm:       implIdent("AsForm"),
	idemimpl.AsBytes:      implIdent("AsBytes"),
	idemimpl.AsMultipart:  implIdent("AsMultipart"),
	idemimpl.AsBinary:     implIdent("AsBinary"),

	idemimpl.SchemeUndefined:    implIdent("SchemeUndefined"),
	idemimpl.SchemeAPIKeyHeader: implIdent("SchemeAPIKeyHeader"),
	idemimpl.SchemeAPIKeyQuery:  implIdent("SchemeAPIKeyQuery"),
	idemimpl.SchemeAPIKeyCookie: implIdent("SchemeAPIKeyCookie"),
	idemimpl.SchemeBearer:       implIdent("SchemeBearer"),
	idemimpl.SchemeBasic:        implIdent("SchemeBasic"),
	idemimpl.SchemeHTTP:         implIdent("SchemeHTTP"),
	idemimpl.SchemeMutualTLS:    implIdent("SchemeMutualTLS"),

	idemimpl.TypeNull:    implIdent("TypeNull"),
	idemimpl.TypeBoolean: implIdent("TypeBoolean"),
	idemimpl.TypeInteger: implIdent("TypeInteger"),
	idemimpl.TypeNumber:  implIdent("TypeNumber"),
	idemimpl.TypeString:  implIdent("TypeString"),
	idemimpl.TypeArray:   implIdent("TypeArray"),
	idemimpl.TypeObject:  implIdent("TypeObject"),

	idemimpl.HasMinimum:       implIdent("HasMinimum"),
	idemimpl.HasMaximum:       implIdent("HasMaximum"),
	idemimpl.HasMultipleOf:    implIdent("HasMultipleOf"),
	idemimpl.HasMinLength:     implIdent("HasMinLength"),
	idemimpl.HasMaxLength:     implIdent("HasMaxLength"),
	idemimpl.HasMinItems:      implIdent("HasMinItems"),
	idemimpl.HasMaxItems:      implIdent("HasMaxItems"),
	idemimpl.HasMinProperties: implIdent("HasMinProperties"),
	idemimpl.HasMaxProperties: implIdent("HasMaxProperties"),

	idemimpl.FormatInt32:    implIdent("FormatInt32"),
	idemimpl.FormatInt64:    implIdent("FormatInt64"),
	idemimpl.FormatFloat:    implIdent("FormatFloat"),
	idemimpl.FormatDateTime: implIdent("FormatDateTime"),
	idemimpl.FormatDate:     implIdent("FormatDate"),
	idemimpl.FormatUUID:     implIdent("FormatUUID"),
	idemimpl.FormatEmail:    implIdent("FormatEmail"),
	idemimpl.FormatURI:      implIdent("FormatURI"),
	idemimpl.FormatIPv4:     implIdent("FormatIPv4"),
	idemimpl.FormatIPv6:     implIdent("FormatIPv6"),
	idemimpl.FormatByte:     implIdent("FormatByte"),
	idemimpl.FormatBinary:   implIdent("FormatBinary"),

	additional(idemimpl.NoAdditional):  implIdent("NoAdditional"),
	additional(idemimpl.AnyAdditional): implIdent("AnyAdditional"),

	idem.KeyFormatUUID:      idemIdent("KeyFormatUUID"),
	idem.KeyFormatUUIDv4:    idemIdent("KeyFormatUUIDv4"),
	idem.KeyFormatUUIDv7:    idemIdent("KeyFormatUUIDv7"),
	idem.KeyFormatOpaque:    idemIdent("KeyFormatOpaque"),
	idem.KeyFormatPrintable: idemIdent("KeyFormatPrintable"),

	idem.ModeAtomic:         idemIdent("ModeAtomic"),
	idem.ModeLease:          idemIdent("ModeLease"),
	idem.InFlightReject:     idemIdent("InFlightReject"),
	idem.InFlightWait:       idemIdent("InFlightWait"),
	idem.SchemaChangeReplay: idemIdent("SchemaChangeReplay"),
	idem.SchemaChangeReject: idemIdent("SchemaChangeReject"),
	idem.ExpiredExecute:     idemIdent("ExpiredExecute"),
	idem.ExpiredReject:      idemIdent("ExpiredReject"),
	idem.ProfileDefault:     idemIdent("ProfileDefault"),
	idem.ProfileIETF:        idemIdent("ProfileIETF"),
	idem.ProfileStripe:      idemIdent("ProfileStripe"),
}

// runtimeName is the identifier of runtime constant v; an error names a
// value the table does not hold (a constant added to the runtime and not
// here).
func runtimeName(v any) (goIdent, error) {
	id, ok := runtimeNames[v]
	if !ok {
		return goIdent{}, fmt.Errorf("no runtime constant for %T %v", v, v)
	}
	return id, nil
}

// policyValue is the runtime value of an x-idempotent field's value, as
// the idemConst template function names the field (KeyFormat, Mode, ...).
func policyValue(kind, value string) (any, bool) {
	switch kind {
	case "KeyFormat":
		return idem.KeyFormat(value), true
	case "Mode":
		return idem.Mode(value), true
	case "InFlight":
		return idem.InFlight(value), true
	case "OnSchemaChange":
		return idem.OnSchemaChange(value), true
	case "OnExpired":
		return idem.OnExpired(value), true
	case "Profile":
		return idem.Profile(value), true
	}
	return nil, false
}
