# sessionkit: `make run` runs the quickstart on the embedded defaults,
# `make test` runs every check CI runs.

GO       ?= go
PKGS     ?= ./...
FUZZTIME ?= 5s

.PHONY: run test fmt-check vet unit fuzz-short fuzz bench soak build

run:
	$(GO) run ./examples/quickstart

build:
	$(GO) build ./...

test: fmt-check vet unit fuzz-short

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -shuffle=on -count=1 -timeout 12m $(PKGS)

# Short fuzz runs of every fuzz target (a longer run: make fuzz FUZZTIME=5m).
fuzz-short:
	@./scripts/fuzz.sh $(FUZZTIME)

fuzz:
	@./scripts/fuzz.sh $(if $(filter 5s,$(FUZZTIME)),2m,$(FUZZTIME))

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 $(PKGS)

soak:
	$(GO) test -count=1 -timeout 60m ./history/sqlite/ -run TestCrashKill -crash.kills=1000
