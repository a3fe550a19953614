// Package idemvet is the analyzer behind `idemgen vet`: it checks the
// handlers of an idemgen-generated server against the three rules the
// engine cannot enforce at run time.
//
// An idempotent operation's method receives the transaction that will also
// store the operation's idempotency record:
//
//	CreateBooking(ctx context.Context, tx pgx.Tx, req CreateBookingRequest) (CreateBookingResponse, error)
//
// The generated Server interface marks each such method with a line
//
//	//idemgen:tx mode=atomic operation=createBooking
//
// (mode=lease for lease mode; a WebhookReceiver's methods say
// mode=inbox webhook=NAME). The analyzer reads those lines in the
// generated package, exports them as a package fact, and in every package
// checks the methods that implement them (same name and signature) for:
//
//   - pool: a database statement through anything but tx: a
//     *pgxpool.Pool, *pgxpool.Conn, *pgx.Conn, *sql.DB, *sql.Conn or
//     *sql.Tx, an interface with Exec and Query methods (sqlc's DBTX), or
//     a sqlc Queries built on one (New(pool), a struct field). What it
//     writes commits even when the request fails, and the retry writes it
//     again. Values derived from tx are fine: tx.Begin (a savepoint),
//     tx.Conn(), New(tx), q.WithTx(tx), a struct literal holding tx, a
//     helper's parameter given tx. Where a mechanical fix exists (the
//     receiver replaced with tx, .WithTx(tx) added, New's argument
//     replaced) the diagnostic carries it.
//   - outbound: in an atomic operation (and a webhook receiver), a call
//     out of the process that a retry of the handler would make again
//     under another key, or none. When the client hangs up or the
//     transaction rolls back after the call returned, the retry runs the
//     handler, and the call, again. The calls: net/http's Get, Head,
//     Post, PostForm and the same methods of *http.Client and Do, an
//     http.RoundTripper, gRPC's ClientConn.Invoke and NewStream and every
//     method of a generated gRPC client (a method whose last parameter is
//     ...grpc.CallOption), net/smtp.SendMail, stripe-go's calls that take
//     params (sc.V1Refunds.Create(ctx, params); not its reads), what the
//     -outbound flag adds, and a call through idemclient.Do: Do itself or
//     a generated client's method. The analyzer knows those by an object
//     fact it exports on each function that calls Do in a file idemgen
//     generated, or that passes an ...idemclient.CallOption parameter of
//     its own on to Do (a wrapper written like one).
//     Accepted is a call whose key is derived from the request (package
//     runtime/downstream): a generated client's call of an idempotent
//     operation given the handler's ctx (or a context made from it by a
//     function given it: context.WithTimeout, WithValue, WithoutCancel)
//     and no key of the caller's, or given a derived key; a call of an
//     operation that is not idempotent with a method HTTP defines as
//     idempotent (GET, HEAD, OPTIONS, PUT, DELETE); net/http's Do with a
//     derived key in a header of the request (r.Header.Set or Add);
//     stripe-go's with one on the params (SetIdempotencyKey,
//     Params.IdempotencyKey); any other call with one in an argument. A
//     derived key is what a -keyed function (downstream.Key and KeyAs by
//     default) returned given the handler's context, passed on as it is
//     or through a conversion, a function of one argument
//     (stripe.String(k)) or a method without one (u.String()); the
//     incoming key itself (idem.KeyFromContext(ctx).Value, the
//     handler's request passed on with its key field), downstream.Derive, a fresh key (uuid.NewString(), idemclient.NewKey,
//     rand.Text()) and a constant are not. A webhook receiver's context
//     carries no request to derive from.
//   - savepoint: a statement on tx whose error the handler inspects
//     (err != nil, errors.As to *pgconn.PgError, a Code comparison,
//     errors.Is with anything but pgx.ErrNoRows or sql.ErrNoRows) and then
//     answers without an error, or carries on. PostgreSQL has aborted the
//     transaction (SQLSTATE 25P02): storing the idempotency record fails
//     and the client gets a 500. A statement in a savepoint (tx.Begin with
//     a Rollback of it, pgx.BeginFunc, or SAVEPOINT and ROLLBACK TO
//     statements in the same function) is fine.
//
// Calls into functions and methods of the same package are followed (to a
// bounded depth, each recursion once), with their parameters bound to the
// caller's arguments; a finding inside one names the chain from the
// handler. Calls into other packages are not followed: list an SDK's
// client methods with -outbound.
//
// Flags (comma-separated lists of pkgpath.Func, pkgpath.Type.Method or
// pkgpath.Type for every method of the type):
//
//	-outbound  more functions that call out of the process
//	-keyed     more functions that derive a downstream idempotency key
//	           from the request's, besides downstream.Key and KeyAs
//
// Run it as `idemgen vet ./...`, or as `go vet -vettool=$(which idemgen)
// ./...` (where the flags are -idemvet.outbound and -idemvet.keyed), or
// import Analyzer into another driver (golangci-lint's module plugins, a
// multichecker).
package idemvet
