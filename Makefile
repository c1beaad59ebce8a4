# Depot: build, run and test.
GO      ?= go
# build and run use ./bin/depot (ignored by git); install puts the binary
# where `go install` puts binaries.
BIN     ?= bin/depot
INSTALLDIR ?= $(shell $(GO) env GOBIN)
ifeq ($(INSTALLDIR),)
INSTALLDIR := $(shell $(GO) env GOPATH)/bin
endif
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/depot-registry/depot/shared/version.Version=$(VERSION)
FUZZTIME ?= 20s
# make image: the container image, tagged with the version built into it.
DOCKER  ?= docker
IMAGE   ?= depot

.PHONY: build install run image test test-short lint fuzz bench bench-cluster clean

build: ## build the depot binary (into ./bin)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/depot
	@echo "built $(BIN)"

install: build ## copy the binary to $(INSTALLDIR) (where go install puts binaries)
	install -d $(INSTALLDIR)
	install -m 0755 $(BIN) $(INSTALLDIR)/depot
	@echo "installed $(INSTALLDIR)/depot"

run: build ## run a single-node origin with its data in ./data
	$(BIN) origin --data-dir ./data

image: ## build the container image $(IMAGE):$(VERSION) (deploy/Dockerfile; needs BuildKit)
	$(DOCKER) build -f deploy/Dockerfile --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) .
	@echo "built $(IMAGE):$(VERSION)"

# What tests keep (the web UI's screenshots, one PNG per page visited).
TEST_OUTPUT ?= $(CURDIR)/bin/test-output

test: lint ## run every test (CI runs this); screenshots and other test output in bin/test-output
	@mkdir -p $(TEST_OUTPUT)
	$(GO) test -race -count=1 -timeout 30m -artifacts -outputdir $(TEST_OUTPUT) ./...
	@# Allocation counts mean something only without the race detector.
	$(GO) test -count=1 -run 'AllocatesNothing' ./edge/...

test-short: ## unit tests only, skipping the slower process tests
	$(GO) test -short -count=1 ./...

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# The plugin SDK and the example plugins build for WebAssembly only.
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./shared/format/plugin/sdk ./shared/format/plugin/example/...

fuzz: ## run each fuzz test for FUZZTIME
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for fn in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$fn"; $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

bench: ## the download hot path: edge, origin and nginx under wrk (bench/downloads.sh)
	bench/downloads.sh

bench-cluster: ## a cluster of origins: upload throughput, visibility on an edge, failover (bench/cluster.sh)
	bench/cluster.sh

clean:
	rm -f $(BIN)
