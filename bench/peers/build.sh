#!/usr/bin/env bash
# The peers benchload compares idemgen with, generated from the bench spec
# (../openapi.yaml) by the pinned versions of ogen and oapi-codegen that
# go.mod declares as tools, then built:
#
#   bench/peers/build.sh DIR    writes DIR/ogen and DIR/oapi-codegen
#
# The generated files stay beside their main.go, ignored by git: the point is
# what these generators make of the spec today, at their pinned versions,
# not a copy frozen in the repository. This module is not part of make test
# (the Makefile's MODULES leaves it out), so that a clean clone's tests
# never fetch the two generators; make bench runs this script.
set -euo pipefail
out=$(cd "${1:?usage: build.sh DIR}" 2>/dev/null && pwd || { mkdir -p "$1" && cd "$1" && pwd; })
cd "$(dirname "$0")"
go tool ogen -loglevel error -target ogen -package main -clean ../openapi.yaml
go tool oapi-codegen -config oapi-codegen/config.yaml ../openapi.yaml
go build -o "$out/" ./ogen ./oapi-codegen
echo "build.sh: $out/ogen and $out/oapi-codegen ($(go list -m -f '{{.Path}} {{.Version}}' github.com/ogen-go/ogen github.com/oapi-codegen/oapi-codegen/v2 | tr '\n' ' '))" >&2
