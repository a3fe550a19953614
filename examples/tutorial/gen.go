package main

// The generated files: package api from openapi.yaml (idemgen.yaml), and
// idemgen's own migrations exported for goose into migrations/idemgen.
//
//go:generate go tool idemgen generate
//go:generate go tool idemgen migrations -format goose -dir migrations/idemgen
