# sitewatch — see README.md. Every target works on a fresh machine with Go and gcc.
GO        ?= go
BIN       := bin
PKGS      := ./...
DEMO_ADDR ?= 127.0.0.1:18080
export CGO_ENABLED := 1

.PHONY: build release test test-seconds soak test-short test-long demo bench bench-compare bench-scale bench-analyst lint fmt clean tools

# The version every output names (--version, manifests, webhooks), stamped by the linker so it
# holds where the toolchain records no VCS data (GOFLAGS=-buildvcs=false, a tarball).
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
STAMP   := -X sitewatch/pipeline/buildinfo.stamped=$(VERSION)

# build keeps the symbol table and DWARF: a developer's binary works with dlv, pprof and
# `go tool nm`. release strips them (-s -w) for the binary that ships (docs/internals.md).
build:
	$(GO) build -ldflags "$(STAMP)" -o $(BIN)/sitewatch ./cmd/sitewatch
	$(GO) build -ldflags "$(STAMP)" -o $(BIN)/atlas-sim ./cmd/atlas-sim

release:
	$(GO) build -ldflags "-s -w $(STAMP)" -o $(BIN)/sitewatch ./cmd/sitewatch
	$(GO) build -ldflags "-s -w $(STAMP)" -o $(BIN)/atlas-sim ./cmd/atlas-sim

# The whole suite, race detector on every package but the end-to-end one; CI runs this. The
# publish tests start versitygw.
# cmd/sitewatch's end-to-end tests (154, the longest package: over 40 min) often wait (leases
# expiring, lock timeouts, cron ticks, rate limits) and set credentials in the process environment, so
# instead of t.Parallel they run as CMD_SHARDS processes side by side (scripts/test-shards.sh),
# beside the other packages (docs/internals.md, "The test suite"), and without -race: the
# engine's concurrency is under the detector in its own packages' tests, and the end-to-end
# tests' CPU is mostly DuckDB's (run 39: 832 s of CPU in -race shards; run 40: 706 s without). The report's layout
# budgets (5,000 domains in Chromium) run once more without the race detector's instrumentation
# (it triples the time of writing 5,000 domains); their times are BenchmarkReport5000's (make bench).
# Every pass runs side by side with the others: the end-to-end shards spend much of their time
# waiting, and what runs beside them fills that time (no test here times itself). Every
# -timeout is a hang guard, HANG_GUARD below: at load 30 (four engineers' jobs beside a CI run)
# the soak took over 15 minutes and the Chromium pass as long; neither hung.
# NORACE_TESTS run in one goroutine of their package's code and take minutes under the
# detector's instrumentation: the simulator's generator over thousands of bodies (942 s under
# -race, 75 s without, at load 20) and the report's Needs attention section over a 5,000-domain
# warehouse in Chromium (798 s, 99 s; the report's code starts no goroutine, the warehouse's
# concurrent loading is tested under -race in its own package), now checked in the report's
# layout budgets (they skip themselves under -race), in the budget probe's page. They run
# in a pass without -race.
# Four shards: the end-to-end tests mostly wait (alone, with four shards: 9.3 min wall for 10.1 min
# of CPU on 2 cores, shards 435-519 s); three left each shard ~840 s, the longest pass of CI.
CMD_SHARDS ?= 4
# The race pass starts its packages in the order given (go test runs them in command-line
# order), the longest first: in alphabetical order pipeline/changes (516 s beside the shards)
# and pipeline/warehouse started late and the pass ended 80 s after the shards (run 39). It
# keeps go test's default of one package per core: three at a time (-p 3, run 41) ended it 20 s
# later, as every process beside the others spends more CPU on the same work (2,173 s of CPU in
# the run against run 40's 2,043). The packages not listed, short ones, run under -race after
# the passes without it, once those are done (about two thirds in): at the end of the race pass
# they compiled, linked and ran two at a time for 110 s after the shards had ended (run 40), and
# for over 5 minutes beside two busy loops (run 42).
RACE_FIRST := ./pipeline/changes ./pipeline/publish/iceberg ./pipeline/warehouse ./pipeline/report ./pipeline/publish ./pipeline/discover ./pipeline/atlas ./pipeline/atlas/atlastest ./pipeline/bucketsync ./pipeline/config ./pipeline/lease ./pipeline/fencesim ./pipeline
NORACE_TESTS := ^(TestGeneratesEverywhere|TestPlausibleOver10000Domains|TestFamousSites|TestRankFollowsVisits|TestGeneratedDomainsDistinctRanks|TestLayoutBudgets)$$
# Before the passes fan out, one go command compiles every package with the race detector:
# go commands running at once do not share work in progress, so the race pass of the other
# packages and the shards' race build each compiled the same dependencies (on a fresh machine
# that doubled ~12 minutes of CPU; two `go build -race` of the S3 SDK at once: 195 s of CPU,
# one: 88 s). vet compiles the plain build the same way.
# The go test passes skip their own vet (-vet=off): `go vet ./...` above (and the lint's govet)
# already ran every analyzer, and go test's vet ran again over every dependency for each build
# configuration (race, plain, faultsoak): 1,571 vet processes, 207 s of CPU in a fresh-machine
# CI run (run 23, process accounting).
# The race build leaves out the main packages: it is there to compile every dependency once, and
# `go build` of a main package also links it (DuckDB included), a binary nothing runs.
# Every -timeout of make test is a hang guard, not a budget. With two busy loops beside it on a
# new 2-core machine (CI run 25) each cmd/sitewatch shard took 1,917-1,989 s: 83 % of the 40
# minutes the guard was. 60 minutes keeps a hang reported (a fresh machine starts the shards
# ~15 minutes in) within .ci/run's 90.
HANG_GUARD := 60m
# Every test binary (and the sitewatch binary the end-to-end tests start) links DuckDB's static
# library: link and ld took 254 s of CPU in a fresh-machine CI run. Tests link without DWARF
# (-w: a race report or a panic symbolises from Go's own tables, which stay) and with gold where
# binutils has it: a race test binary of pipeline/warehouse links in ~4.2 s of CPU instead of
# ~6.5 (ld.bfd with DWARF). The binaries of `make build` keep both.
TEST_LINKER := $(if $(shell command -v ld.gold),-fuse-ld=gold)
test: export GOFLAGS := $(strip $(GOFLAGS) -ldflags=-w)
test: export CGO_LDFLAGS := $(strip $(or $(CGO_LDFLAGS),-O2 -g) $(TEST_LINKER))
test: tools
	$(GO) vet $(PKGS)
	$(GO) build -race $$($(GO) list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' $(PKGS))
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	@first=$$($(GO) list $(RACE_FIRST)); \
	  late=$$($(GO) list $(PKGS) | grep -vx 'sitewatch/cmd/sitewatch' | grep -vxF "$$first"); \
	  $(GO) test -vet=off -race -timeout $(HANG_GUARD) -skip '$(NORACE_TESTS)' $$first & rest=$$!; \
	  SITEWATCH_FAULT_SEED=$(FAULT_SEEDS) $(GO) test -vet=off -count=1 -tags faultsoak -timeout $(HANG_GUARD) -run 'TestFaultSchedules|TestAnswerLogBoundsWhatATakeoverRepays' ./cmd/sitewatch/ & soak=$$!; \
	  { code=0; \
	    $(GO) test -vet=off -count=1 -timeout $(HANG_GUARD) -run '$(NORACE_TESTS)' ./pipeline/atlas/atlastest/ ./pipeline/report/ || code=1; \
	    $(GO) test -vet=off -count=1 -timeout $(HANG_GUARD) -run 'TestSimulatedSchedules' ./pipeline/fencesim/ || code=1; \
	    $(GO) test -vet=off -race -timeout $(HANG_GUARD) -skip '$(NORACE_TESTS)' $$late || code=1; \
	    exit $$code; } & norace=$$!; \
	  GO=$(GO) TEST_TIMEOUT=$(HANG_GUARD) scripts/test-shards.sh $(CMD_SHARDS) ./cmd/sitewatch -vet=off; cmd=$$?; \
	  wait $$rest; other=$$?; wait $$soak; soaked=$$?; wait $$norace; plain=$$?; \
	  test $$cmd -eq 0 && test $$other -eq 0 && test $$soaked -eq 0 && test $$plain -eq 0

# Measures how long each cmd/sitewatch test takes (one verbose sharded run, built as make test
# builds it) and writes scripts/sitewatch-test-seconds, by which `make test` deals the tests to
# its shards.
test-seconds: tools
	GO=$(GO) TEST_TIMEOUT=60m TEST_SECONDS_WRITE=1 scripts/test-shards.sh $(CMD_SHARDS) ./cmd/sitewatch -vet=off

# The in-process fault simulation plays 1,000 seeded schedules in fake time (about 3.3 s of CPU;
# 100 in the -race pass above): docs/sharing.md, "The in-process simulation".
# Three fault schedules (machines sharing a bucket: kill -9, kill -9 with the warehouse wiped,
# cuts shorter and longer than a takeover, restore --force; each seed's drawn faults replay), and
# the answer log's kill-and-wipe scenario with the log on and off (the checker must fail without
# it), in every `make test`, beside the race-detector pass (its bounds do not depend on load: a
# loaded machine is part of what it must survive); `make soak` draws 21 new schedules (SITEWATCH_FAULT_SCHEDULES=N).
FAULT_SEEDS ?= 19,42,43

soak:
	$(GO) test -count=1 -tags faultsoak -timeout 90m -run TestFaultSchedules ./cmd/sitewatch/

test-short:
	$(GO) test -short $(PKGS)

# The long variants too (SITEWATCH_LONG=1: more kill points, longer fuzz-free soaks), then one
# run at 1,000, 10,000 and 100,000 domains (BenchmarkRunScale: peak RSS, ms per domain, calls/s).
test-long:
	SITEWATCH_LONG=1 $(GO) test -race -timeout 80m $(PKGS)
	SITEWATCH_LONG=1 $(GO) test -run '^$$' -bench BenchmarkRunScale -benchtime 1x -timeout 60m ./cmd/sitewatch/

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m $(PKGS)

# One month end to end at 100,000 domains (SITEWATCH_SCALE_DOMAINS to change it): run with
# both publish formats, publish again, restore onto a fresh directory, run there; each step's
# wall time and peak RSS (BenchmarkScale, docs/internals.md "Benchmarks"). About 15 minutes and
# 2 GB of disk on 2 cores.
bench-scale:
	SITEWATCH_SCALE_DOMAINS=$${SITEWATCH_SCALE_DOMAINS:-100000} $(GO) test -run '^$$' -bench BenchmarkScale -benchtime 1x -timeout 120m ./cmd/sitewatch/

# A change against BASE (a commit): the run's scale at 1,000 domains and the in-process rebuild,
# BASE and the work tree alternately, ROUNDS times (default 3), medians and head/base ratios
# (scripts/bench-compare.sh; BENCH and PKGS pick other benchmarks).
bench-compare:
	GO=$(GO) scripts/bench-compare.sh $${BASE:?set BASE=<commit>} $${ROUNDS:-3}

# What an analyst opens after two months of 100,000 domains (SITEWATCH_ANALYST_DOMAINS to
# change it): report, changes, needs attention, discover, show and status, each's wall time and
# peak RSS (BenchmarkAnalyst, docs/report.md "At agency scale"). SITEWATCH_ANALYST_KEEP=dir keeps
# the warehouse there and measures it again without rebuilding. About 40 minutes on 2 cores.
bench-analyst:
	SITEWATCH_ANALYST_DOMAINS=$${SITEWATCH_ANALYST_DOMAINS:-100000} $(GO) test -run '^$$' -bench BenchmarkAnalyst -benchtime 1x -timeout 180m ./cmd/sitewatch/

# golangci-lint (errcheck, govet, staticcheck, revive, unused, bodyclose, depguard layer rules in
# .golangci.yml) and gofmt; fails on any finding. Installs the linter with the Go toolchain when missing.
GOLANGCI_LINT_VERSION := v2.15.0
GOBIN_DIR := $(shell $(GO) env GOPATH)/bin
lint: $(GOBIN_DIR)/golangci-lint
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GOBIN_DIR)/golangci-lint run ./...

$(GOBIN_DIR)/golangci-lint:
	$(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

# versitygw: the S3-compatible gateway the publish tests start on loopback (about 1-5 minutes
# to build the first time).
VERSITYGW_VERSION := v1.8.0
tools: $(GOBIN_DIR)/versitygw

$(GOBIN_DIR)/versitygw:
	$(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

fmt:
	gofmt -w .

clean:
	rm -rf $(BIN)

# Offline demo on the simulator: builds, then runs scripts/demo.sh.
demo: build
	./scripts/demo.sh
