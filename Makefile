# idemgen — build, generate, test, bench, demo.
#
#   make test             throwaway PostgreSQL and Redis + gofmt + go mod tidy + check-generated + go test -vet=all (-race where it runs concurrency) + idemgen vet
#   make test-loaded      make test beside two busy loops, one per core (a busy machine)
#   make demo             the payments example, start to finish, against a throwaway PostgreSQL
#   make bench            benchmarks (see BENCHMARKS.md); make bench-headline: its headline table, three runs
#   make generate         sqlc (when its inputs changed: scripts/sqlc.sh) + go generate
#   make check-generated  fails when any generated file differs from what is committed
#   make api-check        runtime/...'s API against the last release's (api/, CHANGELOG.md)
#   make rules-check      promtool checks and unit-tests deploy/prometheus's rules

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
PG := scripts/pg.sh
REDIS := scripts/redis.sh

# Every Go module of the repository except the sqlc tool module and
# bench/peers (the servers ogen and oapi-codegen generate, built by make bench
# only: its generators are not fetched for the tests); generator golden
# modules under testdata are built by the generator's own tests.
MODULES := . $(patsubst %/go.mod,%,$(shell find examples bench -name go.mod -not -path '*/testdata/*' -not -path 'bench/peers/*' 2>/dev/null | sort))

.PHONY: all test test-loaded test-in-db race-deps api-check rules-check fmt-check mutants-check tidy-check vet vet-handlers unit unit-generator unit-modules unit-examples unit-payments unit-env download generate check-generated bench bench-in-db bench-bin bench-headline bench-headline-in-db bench-ab regions demo demo-in-db tools

all: test

tools:
	$(GO) build -modfile=tools/go.mod -o /dev/null github.com/sqlc-dev/sqlc/cmd/sqlc

# download fetches every module's dependencies (what tidy-check, vet and the
# tests would fetch one module after the other).
download:
	@for m in $(MODULES) generator/testdata/golden tools/apicheck; do (cd $$m && $(GO) mod download); done

# generate runs sqlc through scripts/sqlc.sh, which skips it while sqlc.sum
# (committed beside each sqlc.yaml) matches the queries, the migrations,
# sqlc's pinned version and the files sqlc wrote: building sqlc is the
# costliest build a clean clone would make. SQLC_FORCE=1 runs it anyway. go generate skips the
# example's own sqlc line (examples/payments/payments.go) for the same reason.
generate:
	scripts/sqlc.sh . examples/payments
	@for m in $(MODULES); do echo "go generate ($$m)"; (cd $$m && $(GO) generate -skip 'sqlc generate' ./...); done

check-generated: generate
	@if [ -n "$$(git status --porcelain --untracked-files=all -- . ':!**/testdata/**/got' 2>/dev/null)" ]; then \
		echo "check-generated: generated files differ from the committed ones:"; \
		git status --porcelain --untracked-files=all; git --no-pager diff --stat; exit 1; \
	fi
	@echo "check-generated: clean"

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '/testdata/' ) 2>&1); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# mutants-check fails when a mutant of scripts/mutants.sh no longer applies
# to the code it breaks (only that: the suites run by hand, docs/testing.md).
mutants-check:
	@scripts/mutants.sh -check

# tidy-check fails when a go.mod or go.sum is not what `go mod tidy` makes
# of it (a direct dependency marked indirect, a missing or stale sum).
tidy-check:
	@for m in $(MODULES) generator/testdata/golden tools tools/apicheck tools/apicheck/testdata/previous; do echo "go mod tidy -diff ($$m)"; (cd $$m && $(GO) mod tidy -diff); done

vet:
	@for m in $(MODULES); do echo "go vet ($$m)"; (cd $$m && $(GO) vet ./...); done

# test starts a throwaway PostgreSQL and a throwaway Redis (the engine's
# optional cache, runtime/idemredis), runs everything against them and
# removes them afterwards, also when a step fails.
test:
	$(PG) run $(REDIS) run $(MAKE) --no-print-directory test-in-db

# test-loaded is make test with two CPU-bound processes beside it, one
# pinned to each of the first two cores, for the whole run: the suite must
# pass on a machine that is busy with something else (a laptop, a shared CI
# runner), so no test may depend on getting the CPU when it wants it.
test-loaded:
	@pids=""; for c in 0 1; do taskset -c $$c sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT; $(MAKE) --no-print-directory test

#
# test-in-db runs what is independent side by side (scripts/lanes.sh; each
# lane's output is printed as one block with its wall and CPU seconds), in
# four stages, each waiting for the one before:
#   1. fmt-check and mutants-check, then every module's dependencies downloaded (sqlc is
#      built only when check-generated needs to run it: see generate);
#   2. check-generated, alone: it rewrites files the tests compile;
#   3. race-deps: the root module's packages and tests compiled under -race
#      by one go command on both cores, then examples/payments' (beside
#      check-generated it would gain nothing: each keeps both cores busy);
#      beside it tidy-check, which reads go.mod files and sources and
#      writes nothing (after check-generated, so that it never reads a file
#      being rewritten), fetching and loading that stage 1 no longer waits
#      for. After race-deps, api-check (its loads read the export data
#      race-deps built); after tidy-check, rules-check (promtool, installed
#      from Debian's packages the first time);
#   4. the tests in four lanes: the generator's (they generate the real
#      specs and compile them in child go commands), the root module's other
#      packages, the other modules but payments (each one after the other),
#      and examples/payments (its e2e tests mostly wait on servers and a
#      cluster they start, leaving a core to the others), then vet-handlers
#      (that lane ends first).
# At the end it prints every test binary's own run (wall and CPU seconds,
# compiling excluded; scripts/testcpu.sh), most CPU first.
#
# Nothing is compiled twice on purpose: go test vets (-vet=all: every check
# go vet makes) inside its own build, so there is no separate `go vet` pass
# compiling every module once more without -race (make vet still does it).
LANES := scripts/lanes.sh
SUBMAKE := $(MAKE) --no-print-directory
TESTEXEC := -exec $(CURDIR)/scripts/testcpu.sh
test-in-db: fmt-check mutants-check
	@$(SUBMAKE) download
	@$(SUBMAKE) check-generated
	@$(LANES) "$(SUBMAKE) race-deps api-check" "$(SUBMAKE) tidy-check rules-check"
	@export TESTCPU_LOG=$$(mktemp); rc=0; \
	$(LANES) "$(SUBMAKE) unit-generator" "$(SUBMAKE) unit-modules" "$(SUBMAKE) unit-examples" "$(SUBMAKE) unit-payments vet-handlers" || rc=$$?; \
	echo "test binaries, most CPU first (their run alone; scripts/testcpu.sh):"; sort -k5,5 -rn "$$TESTCPU_LOG"; rm -f "$$TESTCPU_LOG"; exit $$rc

# race-deps compiles, under -race, every package of the root module and its
# tests with all they import (the standard library's race build included),
# without linking or running anything: one go command schedules it on both
# cores. Without it the lanes of stage 4 compiled the shared graph (std, pgx,
# the runtime) at the same time, each for itself: the go command shares its
# cache between runs, not work in flight. Then the same for
# examples/payments (its e2e tests are the longest wait of stage 4: compiled
# here, they start with the stage instead of after a compile that the
# other lanes slow down).
race-deps:
	$(GO) list -race -export -deps -test ./... >/dev/null
	cd examples/payments && $(GO) list -race -export -deps -test ./... >/dev/null

# api-check: tools/apicheck's tests. TestAPI compares the exported API of
# runtime/... with the newest release record (api/vX.Y.Z.zip) and fails on
# an incompatible change CHANGELOG.md's [Unreleased] does not list;
# TestPreviousAPI builds code written against the names that moved
# (tools/apicheck/testdata/previous). Both load with -race, reusing
# race-deps' export data.
api-check:
	cd tools/apicheck && $(GO) test -count=1 ./...

# rules-check: promtool check rules and promtool test rules over
# deploy/prometheus (scripts/promtool.sh). runtime/idemprom's TestRules
# checks that the rules name idemprom's metrics.
rules-check:
	scripts/promtool.sh

unit: unit-generator unit-modules unit-examples unit-payments vet-handlers

# vet-handlers runs idemgen vet (docs/vet.md) over every module with a
# generated server; a finding fails it.
VET_MODULES := bench examples/minimal examples/payments examples/routers examples/stripe examples/tutorial
vet-handlers:
	$(GO) build -o bin/idemgen ./cmd/idemgen
	@for m in $(VET_MODULES); do echo "idemgen vet ($$m)"; (cd $$m && $(CURDIR)/bin/idemgen vet ./...); done

unit-env:
	@test -n "$${DATABASE_URL:-}" || { echo "unit: DATABASE_URL is not set (use make test)"; exit 1; }
	@test -n "$${REDIS_URL:-}" || { echo "unit: REDIS_URL is not set (use make test)"; exit 1; }

# The generator's tests run without -race: the race detector instruments
# the test binary, not the generated code its child go commands compile and
# test, and it made generating and loading the real specs in-process several
# times slower (docs/benchmarks-history.md, "Test time: the passes before
# the seventh"). The generator's own concurrency
# runs under -race elsewhere: types rendered beside the templates and files
# formatted in parallel chunks in the second command here, on every golden
# case; the split loader's parts decoded on every core in the third
# (generator/internal/load, whose TestSplitLoadsAlike then only loads; its
# whole loads and comparisons run in the first). internal/load runs here,
# not in unit-modules, the longest lane.
unit-generator: unit-env
	$(GO) test -vet=all $(TESTEXEC) -count=1 -timeout 45m ./generator/...
	$(GO) test -race -vet=off $(TESTEXEC) -count=1 -run '^TestGolden$$' ./generator
	$(GO) test -race -vet=off $(TESTEXEC) -count=1 ./generator/internal/load

# -race where the tests run concurrent code: the root module (the engine,
# its storms, the Redis and NATS adapters, the CLI), examples/payments (e2e
# storms, crashes, failover; unit-payments), examples/migrations and
# examples/stripe (parallel tests). Without it: bench (its one test runs
# the built benchload and benchserver as processes), examples/docsnippets,
# minimal and routers (no
# goroutine of their own; one request at a time against code whose
# concurrency is raced in the root module and in payments): their race
# builds (gin, echo, chi, fiber and their graphs) gave the detector nothing
# to watch.
NORACE_MODULES := bench examples/docsnippets examples/minimal examples/routers

# Every package of the root module but those of unit-generator.
unit-modules: unit-env
	@echo "go test -race (.)"; $(GO) test -race -vet=all $(TESTEXEC) -count=1 -timeout 20m $$($(GO) list ./... | grep -v -e '^github.com/idemgen/idemgen/generator\(/\|$$\)')

# Every other module but examples/payments (unit-payments). Modules
# without -race are built (go build ./...) before they are tested: go test
# compiles a package without tests (docsnippets' world, bench's
# benchserver) beside running the test binaries, and the tests that build
# those packages in a child go command (TestSnippets, TestServersStopped)
# compiled the same graph at the same time, a second time.
unit-examples: unit-env
	@for m in $(filter-out . examples/payments $(NORACE_MODULES),$(MODULES)); do echo "go test -race ($$m)"; (cd $$m && $(GO) test -race -vet=all $(TESTEXEC) -count=1 -timeout 20m ./...); done
	@for m in $(NORACE_MODULES); do echo "go test ($$m)"; (cd $$m && $(GO) build ./... && $(GO) test -vet=all $(TESTEXEC) -count=1 -timeout 20m ./...); done

# -parallel 8: the e2e tests mostly wait (clusters, restarts, killed
# processes, the gateway's latency, leases), each on a schema of its own, so
# one test per core (the default) would leave the cores idle.
unit-payments: unit-env
	cd examples/payments && $(GO) test -race -vet=all $(TESTEXEC) -count=1 -parallel 8 -timeout 20m ./...

bench:
	PG_DURABLE=1 $(PG) run $(REDIS) run $(MAKE) --no-print-directory bench-in-db

# bench-bin builds what the HTTP benchmarks start: benchserver (idemgen's
# variants, the hand-written handler, the naive and Fiber middlewares),
# benchload, and the peers ogen and oapi-codegen generate from the same spec
# at their pinned versions (bench/peers/build.sh).
bench-bin:
	cd bench && $(GO) build -o ../bin/benchserver ./cmd/benchserver && $(GO) build -o ../bin/benchload ./cmd/benchload
	bench/peers/build.sh bin
PEERS := -peers ogen=bin/ogen,oapi-codegen=bin/oapi-codegen -pgbench bench/pgbench

# bench-in-db: Go benchmarks of the generator and the runtime, then the HTTP
# load tool (bench/cmd/benchload) against the bench servers on a PostgreSQL
# with durable commits: every variant as a ratio of the hand-written handler
# in the same rounds (idemgen's modes, its Redis fast path, ogen's and
# oapi-codegen's servers, the naive and Fiber middlewares, pgbench's floors),
# duplicate storms (through Redis too, and with that Redis killed
# mid-storm), the reused-key check, then the cost with 10 k, 1 M and 10 M
# records in the table (about 6 GB of disk) and the sweeper under traffic.
# Results: bench/results.md, docs/bench-latency.svg.
BENCH_FLAGS ?= -duration 3s -rounds 5 -concurrency 1,8,32 -storm-keys 20 -scale 10000,1000000,10000000 -sweep 1000000
bench-in-db: bench-bin
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./generator/... ./runtime/...
	mkdir -p docs
	bin/benchload -server bin/benchserver $(PEERS) $(BENCH_FLAGS) -out bench/results.md -svg docs/bench-latency.svg
	cd examples/payments && $(GO) test -run '^$$' -bench SlowUploads -benchtime 1x ./e2e/

# bench-headline: BENCHMARKS.md's headline table, the measurement to run on
# a quiet machine: every single-request variant at c=32 against the
# hand-written handler, in alternating rounds, three separate runs (each
# with servers and a database of its own), appended to
# bench/results-headline.md with the load average before and after each.
HEADLINE_FLAGS ?= -duration 15s -rounds 4 -concurrency 32 -scenarios handwritten,baseline,ogen,oapi-codegen,atomic,atomic-redis,lease,replay,replay-redis,naive,naive-replay,naive-replay-redis,fiber,pgbench-base,pgbench-lease
# Before each run the machine is let cool down: until the 1-minute load
# average is under HEADLINE_QUIET, for at most HEADLINE_COOL seconds (a
# run leaves it at 8-10 on two cores, and a figure that closes an issue
# comes from a quiet machine); each run records the load it started at.
HEADLINE_QUIET ?= 1
HEADLINE_COOL ?= 300
bench-headline: bench-bin
	@: > bench/results-headline.md
	@for run in 1 2 3; do \
		waited=0; \
		while awk -v q=$(HEADLINE_QUIET) '{exit !($$1 >= q)}' /proc/loadavg && [ $$waited -lt $(HEADLINE_COOL) ]; do \
			[ $$waited -eq 0 ] && echo "bench-headline: load $$(cut -d' ' -f1 /proc/loadavg), waiting up to $(HEADLINE_COOL) s for it to fall under $(HEADLINE_QUIET)"; \
			sleep 5; waited=$$((waited + 5)); \
		done; \
		PG_DURABLE=1 $(PG) run $(REDIS) run $(MAKE) --no-print-directory bench-headline-in-db RUN=$$run; \
	done
	@cat bench/results-headline.md

bench-headline-in-db:
	@echo "## Run $(RUN), $$(date -u +%Y-%m-%dT%H:%MZ), $$(nproc) cores, $$(go version | cut -d' ' -f3)" >> bench/results-headline.md
	bin/benchload -server bin/benchserver $(PEERS) $(HEADLINE_FLAGS) >> bench/results-headline.md

# bench-ab: same-run A/B of the single-server path, benchserver built at
# revisions A and B, driven alternately (scripts/benchab.sh; ROUNDS >= 5,
# default 5): make bench-ab A=cd1d310^ B=cd1d310.
bench-ab:
	scripts/benchab.sh $(A) $(B) $(ROUNDS)

# regions: the two-region simulation (docs/scaling.md, "Regions"): two
# PostgreSQL clusters from scripts/regions.sh, faults (lag, partition, a
# crashed region), keys retried with and without home routing, duplicates
# counted from the databases; fails when one executes under home routing or
# one goes undetected. Not part of make test.
regions:
	scripts/regions.sh run sh -c 'cd bench && $(GO) run ./cmd/regionsim -out results-regions.md'

demo:
	$(PG) run $(MAKE) --no-print-directory demo-in-db

# demo-in-db builds the payments example, starts it on a free port against
# DATABASE_URL, and runs the scripted client; it fails when an expectation
# does. It prints one line per guarantee shown; V=1 (make demo V=1) adds
# every request and response after them (a failed section's always).
demo-in-db:
	@test -n "$${DATABASE_URL:-}" || { echo "demo: DATABASE_URL is not set (use make demo)"; exit 1; }
	cd examples/payments && $(GO) run ./cmd/democlient $(if $(V),-v)
