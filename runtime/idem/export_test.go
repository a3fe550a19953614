package idem

// PinInsertFirst fixes how e serves op's atomic and lease requests, before
// any request: insert (or claim) first (true) or read first (false),
// whatever the guess would say (guess.go).
func PinInsertFirst(e *Engine, op *Operation, insert bool) {
	s, _ := e.check(op)
	g := &s.guess
	g.pinned = -1
	if insert {
		g.pinned = 1
	}
}

// InsertsFirst reports whether e's next atomic request of op inserts first
// (a lease request, claims first).
func InsertsFirst(e *Engine, op *Operation) bool {
	s, _ := e.check(op)
	return s.guess.insertFirst()
}
