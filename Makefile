# trendfetch — see README.md. `make demo` runs the main job against the bundled
# YouTube API emulator; `make test` runs every test (installs redis-server
# with apt-get when missing and running as root).
GO       ?= go
BIN      := bin
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)

.PHONY: all build demo test test-short soak vet lint bench bench-prune bench-search bench-search-scale bench-save bench-schedule fuzz clean

all: build

# The first build downloads the modules and compiles them (modernc.org/sqlite
# is a large package): it says so, since it prints nothing else for minutes.
build:
	@[ -n "$$($(GO) list -m -f '{{.Dir}}' modernc.org/sqlite 2>/dev/null)" ] || \
		echo "==> downloading Go modules (first build only)"
	@$(GO) mod download
	@echo "==> compiling bin/trendfetch and bin/ytemulator (the first build compiles every dependency: 87 s on 2 idle cores, minutes on a busy machine; later builds take seconds)"
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/trendfetch ./cmd/trendfetch
	$(GO) build -trimpath -o $(BIN)/ytemulator ./cmd/ytemulator

demo: build
	@scripts/demo.sh

# golangci-lint, pinned; fetched through the module proxy by `go run` (go.mod
# is not touched). .golangci.yml: staticcheck, funlen and gocognit.
GOLANGCI    := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

# The full suite: vet, golangci-lint, a 32-bit build (microsecond arithmetic
# must not overflow int), every test with the race detector in shuffled
# order (scripts/testsummary: what go test shows, then the skipped tests by
# name and reason), then a short run of every fuzz target.
test:
	@scripts/ensure-redis.sh
	@scripts/ensure-duckdb.sh
	@scripts/ensure-openapi.sh
	@scripts/ensure-kubernetes-models.sh
	$(GO) vet ./...
	$(GO) run $(GOLANGCI) run ./...
	GOARCH=386 $(GO) build ./...
	{ $(GO) test -race -shuffle=on -timeout 30m -json ./... || echo '{"Action":"fail"}'; } | $(GO) run ./scripts/testsummary
	$(MAKE) fuzz

# Each fuzz target for a number of inputs, about 8 s each on an idle 2-core
# machine (go test -fuzz takes one target per run). A count, not a duration:
# when a -fuzztime duration ends, Go 1.26's coordinator (internal/fuzz) can
# see its deadline before its workers' context is cancelled and fail the run
# with a bare "context deadline exceeded" (it did in CI here); a count has no
# deadline. Seed corpora are in the tests (f.Add); failures found are written
# to testdata/fuzz/ and then replayed by every `go test`.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 25000x ./internal/config
	$(GO) test -run '^$$' -fuzz '^FuzzCostTable$$' -fuzztime 50000x ./internal/config
	$(GO) test -run '^$$' -fuzz '^FuzzParseQuery$$' -fuzztime 20000x ./internal/store
	$(GO) test -run '^$$' -fuzz '^FuzzLoadCSVCharts$$' -fuzztime 150000x ./internal/fetch/youtubetest

test-short:
	$(GO) test -short ./...

# The outage fault test (docs/quota.md, "The outage reserve") for 20 randomized rounds, as root.
soak:
	@scripts/ensure-redis.sh
	TRENDFETCH_OUTAGE_ROUNDS=20 $(GO) test -count=1 -timeout 30m -run '^TestOutageReserveFault$$' -v ./cmd/trendfetch

vet:
	$(GO) vet ./...

lint:
	$(GO) run $(GOLANGCI) run ./...

# Benchmarks (figures in issue notes and docs/scale.md; never timed
# assertions in tests). The store's start PostgreSQL as a deployment does
# (fsync and synchronous_commit on, default shared_buffers).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

# One command per measure of the store at scale (figures: docs/scale.md):
# each sub-benchmark BENCH_COUNT times, ratios against the same run's
# SQLite and floors. Fixtures are built on first use and kept in TMPDIR
# (the prune history: minutes; 800,000 videos: tens of minutes).
BENCH_COUNT ?= 3
TMPDIR      ?= /tmp
STORE_BENCH := $(GO) test -run '^$$' -timeout 3h -count $(BENCH_COUNT) ./internal/store -bench

# SQLite prune of the older half of 10, 30 and 60 days of 20 regions'
# charts grown run by run: ms, µs per entry, exponents.
bench-prune:
	$(STORE_BENCH) '^BenchmarkPrune$$' -benchtime 1x

# Every search form on SQLite and PostgreSQL at 200,000 videos plus 7 days
# of 20 regions' charts: x-sqlite, x-floor, x-trigram.
bench-search:
	TRENDFETCH_BENCH_CHARTS=7 TRENDFETCH_BENCH_FIXTURE=$(TMPDIR)/trendfetch-bench-200k-7d.db \
		$(STORE_BENCH) '^BenchmarkSearchEngines$$'

# Every search form on SQLite at 200,000 and 800,000 videos (alternating query
# by query): p50 of each, x-word, exponent.
bench-search-scale:
	$(STORE_BENCH) '^BenchmarkSearchScale$$' -benchtime 3x

# Saving pages of 2 days of 20 regions' charts on each engine: p50, p90,
# bytes per entry, x-sqlite, x-floor.
bench-save:
	$(STORE_BENCH) '^BenchmarkSaveHistory$$' -benchtime 1x

# `schedule` (SQLite, 20 regions every second) against the emulator: its
# resident memory after 100 and 1,100 runs (about a minute a round).
bench-schedule:
	$(GO) test -run '^$$' -count $(BENCH_COUNT) ./cmd/trendfetch -bench '^BenchmarkScheduleMemory$$' -benchtime 1x

clean:
	rm -rf $(BIN) .demo
