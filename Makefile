# plugboard: build, test, lint, benchmark and demo.
#
#   make build   bin/plugboard and one dist/plugins/NAME.wasm per folder of plugins/
#   make demo    build, inspect a plugin, then watch an agent drive the task tools over MCP
#   make test    build, go test ./..., go vet ./..., also in the abi and sdk-guest
#                modules (PKGS=... to narrow, MODS= to skip those; the client
#                matrix in conformance/clients and the agent CLI test in
#                conformance/agents install their pinned npm packages with npm, the
#                accessibility checks axe-core: internal/testing/a11y/install.sh)
#   make lint    gofmt, go vet (native and wasip1), staticcheck, in every module
#   make bench   benchmarks in bench/, host/internal/runtime, host/internal/board/... and cmd/plugboard/e2e,
#                output also in dist/bench.txt
#   make screenshots  regenerate the README's screenshots (docs/screenshots) with the dashboard's browser tests
#   make clean   remove bin/ and dist/
#
# Go and git are needed (Go modules come through the module proxy); make test and
# make conformance-mcp also need npm, which installs pinned Node.js packages into .cache/;
# make test installs Debian's postgresql for the PostgreSQL tests and chromium for the dashboard's
# browser tests, and prometheus for the metrics test, when it can (build/install-postgresql.sh,
# build/install-chromium.sh, build/install-prometheus.sh).

GO        ?= go
GOROOT_BIN := $(shell $(GO) env GOROOT)/bin
GOFMT     ?= $(GOROOT_BIN)/gofmt
# staticcheck module version (v0.7.0 is 2026.1; v0.8.x requires Go 1.26).
# List versions with: go list -m -versions honnef.co/go/tools
STATICCHECK_VERSION ?= v0.8.2
BENCHTIME ?= 1s
BENCHCOUNT ?= 1
TESTFLAGS ?=
PKGS      ?= ./...
# abi and sdk-guest are Go modules of their own, so that a plugin's module
# needs nothing of the host; the root module requires them through replace
# lines. ./... at the root does not reach them: test and lint run in each.
MODS      ?= abi sdk-guest

# `plugboard plugin build` runs the go command found on PATH: make it $(GO)'s.
export PATH := $(GOROOT_BIN):$(PATH)

SHELL       := bash
.SHELLFLAGS := -eu -o pipefail -c
.DELETE_ON_ERROR:
.SUFFIXES:

BIN     := bin/plugboard
PLUGINS := $(filter-out internal,$(patsubst plugins/%/,%,$(wildcard plugins/*/)))
WASM    := $(PLUGINS:%=dist/plugins/%.wasm)

# gosrc lists the non-test .go files under the given directories.
gosrc = $(shell find $(1) -name '*.go' ! -name '*_test.go' 2>/dev/null)

HOST_SRC  := $(filter-out internal/testing/buildtest/%,$(call gosrc,cmd host abi build conformance)) go.mod go.sum abi/go.mod \
             $(shell find host/internal/dashboard/assets -type f 2>/dev/null)
GUEST_SRC := $(call gosrc,sdk-guest abi) go.mod go.sum abi/go.mod sdk-guest/go.mod sdk-guest/go.sum

# Guest packages of the root module, also checked for wasip1, where their ABI
# glue compiles. ./... never matches testdata, so the test plugins are named
# explicitly. GUEST_MODS are the modules checked for wasip1 as a whole.
GUEST_PKGS := ./plugins/... ./testdata/plugins/... ./conformance/mcpfixture/...
GUEST_MODS := $(filter abi sdk-guest,$(MODS))

# staticcheck is built natively once per version: `go run` would build it for
# wasip1 when GOOS=wasip1 is set for the guest pass.
STATICCHECK := bin/tools/staticcheck-$(STATICCHECK_VERSION)

.PHONY: all build test bench demo lint clean conformance-mcp postgres browser a11y prometheus screenshots

all: build

build: $(BIN) $(WASM)

$(BIN): $(HOST_SRC)
	$(GO) build -o $@ ./cmd/plugboard

# Each plugin depends on its own sources, the code first-party plugins share
# (plugins/internal), the guest SDK, abi and the builder.
.SECONDEXPANSION:
dist/plugins/%.wasm: $$(call gosrc,plugins/$$*) $(call gosrc,plugins/internal) $(GUEST_SRC) $(BIN)
	$(BIN) plugin build plugins/$* -o $@

# The tests build their own artifacts (internal/testing/buildtest), so they pass without
# `make build` too; building first catches a broken plugin with a clear error.
# The end-to-end tests of the binary (cmd/plugboard/e2e, the long package)
# take about 19 minutes on a 2-core machine: the per-package timeout leaves
# room for a slower one.
test: build postgres browser a11y prometheus
	$(GO) test -timeout 40m $(TESTFLAGS) $(PKGS)
	$(GO) vet $(PKGS)
	@# sdk-guest/sdktest runs its plugin through plugboard: this one.
	@for m in $(MODS); do \
		echo "cd $$m && PLUGBOARD_BIN=$(CURDIR)/$(BIN) $(GO) test -timeout 40m $(TESTFLAGS) ./... && $(GO) vet ./..."; \
		(cd $$m && PLUGBOARD_BIN=$(CURDIR)/$(BIN) $(GO) test -timeout 40m $(TESTFLAGS) ./... && $(GO) vet ./...); \
	done

# The PostgreSQL tests start throwaway clusters of Debian's postgresql package:
# installed here when missing (as root, with apt-get). Without a server they
# skip, unless PLUGBOARD_REQUIRE_POSTGRES=1 (CI sets it).
postgres:
	@bash build/install-postgresql.sh || { [ -z "$${PLUGBOARD_REQUIRE_POSTGRES:-}" ] && echo "==> PostgreSQL not installed: its tests skip"; }

# The browser tests (internal/testing/browsertest) drive Debian's chromium headless:
# installed here when missing (as root, with apt-get). Without it they
# skip, unless PLUGBOARD_REQUIRE_BROWSER=1 (CI sets it).
browser:
	@bash build/install-chromium.sh || { [ -z "$${PLUGBOARD_REQUIRE_BROWSER:-}" ] && echo "==> Chromium not installed: the browser tests skip"; }

# The browser tests' accessibility checks (internal/testing/a11y) inject axe-core,
# pinned in internal/testing/a11y/package-lock.json: installed here into .cache/a11y
# with npm (the tests would install it on first use too). Without it they skip,
# unless PLUGBOARD_REQUIRE_BROWSER=1.
a11y:
	@bash internal/testing/a11y/install.sh >/dev/null || { [ -z "$${PLUGBOARD_REQUIRE_BROWSER:-}" ] && echo "==> axe-core not installed: the accessibility checks skip"; }

# The metrics end-to-end test scrapes the host with Debian's prometheus:
# installed here when missing (as root, with apt-get). Without it the test
# skips, unless PLUGBOARD_REQUIRE_PROMETHEUS=1 (CI sets it).
prometheus:
	@bash build/install-prometheus.sh || { [ -z "$${PLUGBOARD_REQUIRE_PROMETHEUS:-}" ] && echo "==> Prometheus not installed: the metrics test skips"; }

bench:
	@mkdir -p dist
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) -timeout 60m ./bench/... ./host/internal/runtime ./host/internal/board/... ./cmd/plugboard/e2e | tee dist/bench.txt
	@echo "==> benchmark output saved in dist/bench.txt"

demo: build
	@echo "==> A plugin is one .wasm with its manifest embedded: tools, capabilities, imports (nothing is compiled)"
	@echo "$$ $(BIN) plugin inspect dist/plugins/tasks-control.wasm"
	@$(BIN) plugin inspect dist/plugins/tasks-control.wasm
	@echo
	@echo "==> An agent's closed loop over MCP: plugboard serve as a child process, the demo as its MCP client"
	@echo "$$ $(BIN) demo --plugins dist/plugins"
	@$(BIN) demo --plugins dist/plugins
	@echo
	@echo "==> Your MCP client starts the server itself; e.g. in its configuration (--data DIR picks the board):"
	@echo '    {"mcpServers": {"plugboard": {"command": "$(CURDIR)/$(BIN)", "args": ["serve", "--plugins", "$(CURDIR)/dist/plugins"]}}}'

lint: $(STATICCHECK)
	@echo "gofmt -l ."; \
	out=$$($(GOFMT) -l .); \
	if [ -n "$$out" ]; then echo "gofmt: these files are not formatted (run gofmt -w):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet $(GUEST_PKGS)
	$(STATICCHECK) ./...
	@# U1000 is off for wasip1: staticcheck does not see //go:wasmexport
	@# functions as used, and the native pass already reports unused code.
	GOOS=wasip1 GOARCH=wasm $(STATICCHECK) -checks inherit,-U1000 $(GUEST_PKGS)
	@for m in $(MODS); do \
		echo "cd $$m && $(GO) vet ./... && staticcheck ./..."; \
		(cd $$m && $(GO) vet ./... && $(CURDIR)/$(STATICCHECK) ./...); \
	done
	@# The guest modules also in the builds plugboard plugin build makes
	@# with tags: the describe build, and the one without encoding/json.
	@for m in $(GUEST_MODS); do for tags in "" plugboard_describe plugboard_typed; do \
		echo "cd $$m && GOOS=wasip1 GOARCH=wasm $(GO) vet -tags '$$tags' ./... && GOOS=wasip1 GOARCH=wasm staticcheck -tags '$$tags' -checks inherit,-U1000 ./..."; \
		(cd $$m && GOOS=wasip1 GOARCH=wasm $(GO) vet -tags "$$tags" ./... && GOOS=wasip1 GOARCH=wasm $(CURDIR)/$(STATICCHECK) -tags "$$tags" -checks inherit,-U1000 ./...) || exit 1; \
	done; done

$(STATICCHECK):
	@mkdir -p $(@D)
	GOBIN=$(CURDIR)/$(@D)/tmp $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(@D)/tmp/staticcheck $@ && rmdir $(@D)/tmp

# The official MCP conformance suite (@modelcontextprotocol/conformance): the
# stable release's active server scenarios for spec 2025-11-25, and the
# alpha's --requirements 2026-07-28 and 2025-11-25, against one
# `plugboard serve --http` serving conformance/mcpfixture; fails on any failed
# scored check. npm installs each pinned suite and Node.js 22 into
# .cache/mcp-conformance{,-alpha} on first use.
conformance-mcp: $(BIN)
	BIN=$(BIN) bash conformance/mcp-suite.sh

# The README's screenshots: the dashboard's browser tests that take them, run
# with PLUGBOARD_UPDATE_SCREENSHOTS=1 (Chromium needed: make browser).
screenshots:
	bash build/screenshots.sh

clean:
	rm -rf bin dist
