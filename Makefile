# trendfetch — see README.md. `make demo` runs the main job against the bundled
# YouTube API emulator; `make test` runs every test (installs redis-server
# with apt-get when missing and running as root).
GO       ?= go
BIN      := bin
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)

.PHONY: all build demo test test-short vet bench fuzz clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/trendfetch ./cmd/trendfetch
	$(GO) build -trimpath -o $(BIN)/ytemulator ./cmd/ytemulator

demo: build
	@scripts/demo.sh

# The full suite: vet, a 32-bit build (microsecond arithmetic must not
# overflow int), and every test with the race detector in shuffled order.
test:
	@scripts/ensure-redis.sh
	$(GO) vet ./...
	GOARCH=386 $(GO) build ./...
	$(GO) test -race -shuffle=on -timeout 30m ./...

test-short:
	$(GO) test -short ./...

vet:
	$(GO) vet ./...

# Benchmarks (figures in issue notes; never timed assertions in tests).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

clean:
	rm -rf $(BIN) .demo
