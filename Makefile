# sessionkit: `make run` runs the quickstart on the embedded defaults,
# `make test` runs every check CI runs.

GO       ?= go
PKGS     ?= ./...
FUZZTIME ?= 10000x

.PHONY: run test bench-peer bench-fidelity fmt-check vet unit interop interop-deps webtest webtest-deps fuzz-short fuzz bench soak build

run:
	@echo "make run: building and running examples/quickstart (a first build compiles the SQLite driver and takes a minute)" >&2
	$(GO) run ./examples/quickstart

build:
	$(GO) build ./...

test: fmt-check vet interop-deps unit interop webtest fuzz-short

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -shuffle=on -count=1 -timeout 12m $(PKGS)

# The interop suite's npm packages (also used by acp's Go test against a
# Node.js agent, so `test` installs them before `unit`).
interop-deps:
	cd acp/interop && { [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund; }

# The ACP agent against the official TypeScript SDK client (acp/interop).
interop: interop-deps
	cd acp/interop && node --test --test-reporter=spec

# sessionkit serve in a real browser: playwright-core driving the system's
# chromium (Debian's package; .ci/run installs it), screenshots under
# cmd/sessionkit/webtest/test-output.
webtest-deps:
	cd cmd/sessionkit/webtest && { [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund; }

webtest: webtest-deps
	cd cmd/sessionkit/webtest && node --test --test-reporter=spec

# Short fuzz runs of every fuzz target, counted in executions (Go 1.26 fuzzing
# can end a time-bounded run with a spurious "context deadline exceeded").
# A longer run: make fuzz (500000 executions each) or make fuzz FUZZTIME=2000000x.
fuzz-short:
	@./scripts/fuzz.sh $(FUZZTIME)

fuzz:
	@./scripts/fuzz.sh $(if $(filter 10000x,$(FUZZTIME)),500000x,$(FUZZTIME))

# Benchmarks (docs/performance.md): the Go benchmarks, the SQLite commit
# against a raw fsynced write, and the side-by-side run with a peer SDK.
bench:
	$(GO) test -run='^$$' -bench='Admission|Turn$$' -benchtime=2000x -benchmem ./session/
	$(GO) test -run='^$$' -bench='CompactionOverhead' -benchtime=3x -benchmem ./session/
	$(GO) test -run='^$$' -bench='^BenchmarkOpen$$' -benchtime=100x -benchmem ./session/
	$(GO) test -run='^$$' -bench='ReopenScan' -benchtime=20x ./session/
	$(GO) test -run='^$$' -bench='BenchmarkReplay' -benchtime=20x ./session/
	$(GO) test -run='^$$' -bench='FirstOpen' -benchtime=2x ./session/
	$(GO) test -run='^$$' -bench='SessionSearch' -benchtime=1000x ./session/
	$(GO) test -run='^$$' -bench='RecallRead' -benchtime=20x ./session/
	$(GO) test -run='^$$' -bench='IdleSession' -benchtime=1x ./session/
	$(GO) test -run='^$$' -bench=. -skip='BenchmarkSearch|IndexCost' -benchtime=50x -benchmem ./history/sqlite/
	$(GO) test -run='^$$' -bench='BenchmarkSearch|IndexCost' -benchtime=1000x ./history/sqlite/
	$(GO) test -run='^$$' -bench=. -skip='BenchmarkSearch' -benchtime=50x -benchmem ./history/postgres/
	$(GO) test -run='^$$' -bench='BenchmarkSearch' -benchtime=1000x ./history/postgres/
	$(GO) test -run='^$$' -bench=. -benchtime=20x -benchmem ./compact/ ./provider/openai/
	$(GO) test -run='^$$' -bench='NotificationThroughput|SummaryChunkLatency' -benchtime=20x ./acp/
	$(GO) test -run='^$$' -bench='IdleSessions' -benchtime=1x ./acp/
	$(GO) test -run='^$$' -bench=. -benchtime=1600x ./bench/storecmp/
	$(GO) test -run='^$$' -bench='ServeLongSession' -benchtime=5x ./cmd/sessionkit/
	$(GO) test -run='^$$' -bench='ConfinedTrue' -benchtime=50x ./tools/sandbox/attack/
	$(GO) run ./bench/commitfsync

bench-peer:
	bench/peer/run.sh

# The fidelity benchmark of compaction (docs/compaction.md): 30 seeded
# synthetic sessions compacted 1, 2 and 3 times; a column for the offline
# summarizer and one for the model the environment selects, if any.
bench-fidelity:
	$(GO) run ./bench/fidelity

# The long suites: 1,000 SIGKILLs of a store writer, 1,000 of the ACP agent,
# and 1,000 concurrent sessions on one SQLite file (figures printed with -v).
soak:
	$(GO) test -count=1 -v -timeout 60m ./history/sqlite/ -run '^TestCrashKill$$' -crash.kills=1000
	$(GO) test -count=1 -v -timeout 60m ./history/postgres/ -run '^TestCrash(Kill|ServerKill)$$' -pgcrash.kills=1000 -pgcrash.serverkills=100
	$(GO) test -count=1 -v -timeout 90m ./acp/crashtest/ -run '^TestCrashKillAgent$$' -crash.agent.kills=1000
	$(GO) test -count=1 -v -timeout 60m ./session/ -run '^TestLoad$$' -load.sessions=1000 -load.ops=24
