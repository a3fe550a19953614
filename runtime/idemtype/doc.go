// Package idemtype holds the value types of idemgen-generated request and
// response types, for the OpenAPI shapes Go has no type of its own for:
//
//   - Date: `format: date` (2006-01-02), as text, as a JSON string and as
//     a PostgreSQL date (database/sql Scan and Value, which pgx uses).
//   - Nullable[T]: an optional member that may also be null, keeping absent,
//     null and a value apart (a PATCH that clears a field is not one that
//     leaves it alone).
//   - OrEmpty[T]: a member whose value is T or the empty string ("set to
//     empty to unset").
//   - File: a file part of a multipart/form-data body, handed to a handler
//     as a stream.
//
// Handlers and clients build and read these values; the generated code
// decodes and encodes them. The package does not depend on the engine
// (runtime/idem) and may be imported by any code that handles generated
// types.
package idemtype
