# voiced — build, run and test. Every cgo step (silero-vad-go links -lonnxruntime) gets its flags here.
SHELL := /bin/bash
GO ?= go
ORT_DIR := $(CURDIR)/third_party/onnxruntime
ORT_LIB := $(ORT_DIR)/libonnxruntime.so.1
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

ORT_GO_DIR = $(shell $(GO) list -m -f '{{.Dir}}' github.com/yalue/onnxruntime_go)
SILERO_DIR = $(shell $(GO) list -m -f '{{.Dir}}' github.com/streamer45/silero-vad-go)

export CGO_ENABLED := 1
export CGO_CFLAGS = -I$(ORT_GO_DIR)
export CGO_LDFLAGS = -L$(ORT_DIR) -Wl,-rpath,$(ORT_DIR)
# Tests and the server find the library, the real Silero model and the reference data through these.
export VOICED_ORT_LIB ?= $(ORT_LIB)
export VOICED_SILERO_MODEL ?= $(SILERO_DIR)/testfiles/silero_vad.onnx
export VOICED_SILERO_TESTFILES ?= $(SILERO_DIR)/testfiles
export VOICED_SHARED_DATA ?= $(abspath $(CURDIR)/../shared/data)
export VOICED_BIN ?= $(CURDIR)/bin/voiced

# Where the built binary looks by default at run time (the image build names its own paths).
ORT_RUNTIME_LIB ?= $(ORT_LIB)
SILERO_RUNTIME_MODEL ?= $(SILERO_DIR)/testfiles/silero_vad.onnx
LDFLAGS := -X main.version=$(VERSION) -X main.defaultORTLib=$(ORT_RUNTIME_LIB) -X main.defaultSileroModel=$(SILERO_RUNTIME_MODEL)

BIND ?= 127.0.0.1:8200
MOUNT ?= $(CURDIR)/var/fixture-mount

.PHONY: setup build run test test-deps mutate node-deps test-short bench soak fuzz vet fmt clean fixture env image image-test

setup:
	scripts/install-deps.sh
	$(GO) mod download
	scripts/fetch-onnxruntime.sh $(ORT_DIR)

build:
	@test -f $(ORT_LIB) || { echo "ONNX Runtime missing: run 'make setup' first"; exit 1; }
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/voiced ./cmd/voiced

fixture: build
	@test -f $(MOUNT)/MODELS.sha256 || bin/voiced assets fixture $(MOUNT)

# Serves on $(BIND) with the fixture mount unless VOICED_SPEECH_ASSETS names a real one.
run: build
	@mkdir -p var
	@test -s var/token || head -c 24 /dev/urandom | base64 | tr -d '/+=' > var/token
	@test -s var/jwt-secret || head -c 48 /dev/urandom | base64 | tr -d '/+=' > var/jwt-secret
	@echo "service token: $$(cat var/token)  (var/token)"
	@echo "a principal JWT for the realtime routes and the page at http://$(BIND)/ (1 h):"
	@echo "  $$(bin/voiced token --jwt-secret-file var/jwt-secret --sub demo-user --ttl 1h)"
	@if [ -z "$$VOICED_SPEECH_ASSETS" ]; then $(MAKE) --no-print-directory fixture; fi
	bin/voiced serve --bind $(BIND) --token-file var/token --data-dir var/data --jwt-secret-file var/jwt-secret \
		--speech-assets "$${VOICED_SPEECH_ASSETS:-$(MOUNT)}"

# The whole suite: installs what the tests need first (scripts/install-deps.sh --test, as .ci/run
# does: only the missing Debian packages), starts the loopback PostgreSQL/Redis servers the meter
# and ticket tests use, and ends with internal/testsum's count of passed, failed and skipped tests
# and each skip's name. Under CI=true a skip outside testsum's allow-list fails the run.
# TEST_DEPS=0 leaves the packages alone (what is missing then skips, by name).
test: build test-deps node-deps
	$(GO) vet ./...
	@mkdir -p var
	@eval "$$(scripts/test-services.sh 2>/dev/null || true)"; \
	{ $(GO) test -json -race -count=1 -timeout 40m ./...; echo $$? > var/test-rc; \
	  (cd deploy && $(GO) test -json -count=1 ./...) || echo 1 > var/test-rc; } | $(GO) run ./internal/testsum -rc var/test-rc

test-deps:
	@if [ "$${TEST_DEPS:-1}" != 0 ]; then scripts/install-deps.sh --test || { \
		echo "make test needs its test dependencies: run 'scripts/install-deps.sh --test' as root (or TEST_DEPS=0 make test to run without them)"; exit 1; }; fi

# Mutation testing (not part of make test): gremlins over session's tickets, principal, metering and
# quota, door, meter and the service-token check (scripts/mutate.sh; MUTATE=names picks sets).
mutate:
	scripts/mutate.sh $(MUTATE)

# The openai npm package for tests/node, the OpenAI Agents SDK and esbuild for tests/agents, LiveKit's
# realtime plugin for tests/livekit (offline: the node, Agents SDK and LiveKit tests skip with a
# message when they are missing, which fails under CI=true).
node-deps:
	@for d in tests/node tests/agents tests/livekit; do \
		if [ ! -d $$d/node_modules ] && command -v npm >/dev/null; then \
			(cd $$d && npm ci --no-audit --no-fund) || echo "npm ci failed: the $$d tests will skip"; fi; done

# The container image from the Dockerfile (scripts/image.sh): docker when its daemon answers, else
# podman with runc; the bases are made here (debootstrap, this machine's Go) when no registry answers.
IMAGE ?= voiced:dev
export IMAGE
image:
	scripts/image.sh build

# Boots the image and checks it from outside (tests/image_test.go, built only with -tags image):
# ready, a text and a spoken turn, uid 10001, read-only /models, the meter across a kill, the
# drain; then two containers on the host's Redis and Postgres. Prints the size and run-to-ready.
image-test: build image
	eval "$$(scripts/image.sh env)"; eval "$$(scripts/test-services.sh 2>/dev/null || true)"; \
		$(GO) test -tags image -count=1 -timeout 20m -v -run '^TestImage' ./tests/ | grep -v '^=== \(RUN\|PAUSE\|CONT\)'; exit $${PIPESTATUS[0]}

test-short: build
	$(GO) test -count=1 -short ./...

# The Go benchmarks, then voiced-bench against a fixture-mounted server (scripts/bench.sh, < 2 min).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...
	scripts/bench.sh

# The soak (not part of make test): SOAK_DURATION (10m) of SOAK_CONVERSATIONS (4) conversations and
# the raw doors against a fixture-mounted server; report and plot in var/soak (scripts/soak.sh).
soak: build
	scripts/soak.sh

# Every Fuzz target for FUZZTIME each (default 30s; FUZZ=regexp picks targets, FUZZPARALLEL workers);
# new corpus entries are copied under each package's testdata/fuzz (FUZZKEEP=0 leaves them out).
fuzz:
	GO=$(GO) scripts/fuzz.sh

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

clean:
	rm -rf bin var

# For working by hand: eval "$$(make -s env)" then go test ./some/package
env:
	@echo export CGO_ENABLED=1 CGO_CFLAGS=\"$(CGO_CFLAGS)\" CGO_LDFLAGS=\"$(CGO_LDFLAGS)\" VOICED_ORT_LIB=$(VOICED_ORT_LIB) VOICED_SILERO_MODEL=$(VOICED_SILERO_MODEL) VOICED_SILERO_TESTFILES=$(VOICED_SILERO_TESTFILES) VOICED_SHARED_DATA=$(VOICED_SHARED_DATA) VOICED_BIN=$(VOICED_BIN)
