package idem

// PinInsertFirst fixes how e serves op's atomic requests, before any
// request: insert first (true) or read first (false), whatever the guess
// would say (guess.go).
func PinInsertFirst(e *Engine, op *Operation, insert bool) {
	s, _ := e.check(op)
	g := &s.guess
	g.pinned = -1
	if insert {
		g.pinned = 1
	}
}

// InsertsFirst reports whether e's next atomic request of op inserts first.
func InsertsFirst(e *Engine, op *Operation) bool {
	s, _ := e.check(op)
	return s.guess.insertFirst()
}
