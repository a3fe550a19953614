// Package world is where TestSnippets compiles the docs' snippets: each
// becomes a function of this package (an overlay, never written here) whose
// parameters are the names the docs use without defining them. The
// snippet's statements run in a block of their own, so a snippet may
// declare one of these names again.
package world

// User is the principal of the security snippets.
type User struct{ OrgID string }

// Intent is what a caller keeps for one business intent: the key it sends
// on every retry (docs/client.md).
type Intent struct{ Key string }
