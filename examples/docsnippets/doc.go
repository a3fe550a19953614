// Package docsnippets compiles the Go snippets of the repository's README.md
// and docs/*.md (TestSnippets), so that a snippet that stops compiling —
// a renamed function, a variable nobody declared — fails the build instead
// of the reader. It is a module of its own so that neither idemgen nor the
// payments example depends on the routers and libraries the docs show.
//
// Each ```go block of those pages is, by the line above it:
//
//	(nothing)                   statements, compiled in a function of package
//	                            world, which declares what snippets use but do
//	                            not define (ctx, pool, svc, engine, ...)
//	<!-- file: PATH -->         the file PATH of the repository, byte for byte
//	                            (it compiles where it lives)
//	<!-- go: excerpt PATH -->   lines of the file PATH, in order; a line "..."
//	                            stands for lines left out
//	<!-- go: skip REASON -->    not compiled, for REASON (which is required)
//
// Package pitfalls holds the handlers docs/pitfalls.md excerpts, each
// mistake beside its fix; TestPitfalls checks that idemgen vet reports
// the mistakes and nothing else.
package docsnippets
