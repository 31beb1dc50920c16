# claimbridge — see README.md. Every tool a target needs is installed by hack/ scripts into
# ${CLAIMBRIDGE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/claimbridge}, outside the repository.

GO        ?= go
FUZZTIME  ?= 60s
BENCHTIME ?= 1s
PKGS      := ./...
# Long steps run under hack/heartbeat.sh: whenever one prints nothing for 30 s, a line says
# which step it is, how long it has run and what it is doing (e.g. which packages Go compiles).
HEARTBEAT := $(CURDIR)/hack/heartbeat.sh

# The version is the chart's appVersion: the image the chart runs by default reports it.
VERSION   := $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' charts/claimbridge/Chart.yaml)
COMMIT    := $(shell c="$$(git rev-parse HEAD 2>/dev/null)" || c=unknown; \
	if [ "$$c" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then c="$$c-dirty"; fi; echo "$$c")
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.DEFAULT_GOAL := build
.PHONY: build version image chart example dashboard clidocs apidocs deadcode test unit verify lint fmt fmt-check vet tidy-check import-check size-check fuzz bench bench-unit bench-e2e bench-smoke help

help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

build: ## build bin/claimbridge (version and commit stamped)
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/claimbridge ./cmd/claimbridge

version: ## print the version (the chart's appVersion)
	@echo $(VERSION)

# The image is built without a container engine (e2e/image, go-containerregistry): an OCI image
# layout with a linux/amd64 + linux/arm64 index in _output/image/oci, and a docker-style tarball
# per platform. IMAGE_PLATFORMS picks others. See docs/tasks/install.md, "Container image".
# The rehearsal image (_output/image/rehearse) is the image of this machine's platform with the
# pinned control plane that hack/e2e-bins.sh builds once (857 s cold, cached) and the one of the
# minor before it that hack/k8sbins builds once (246 s more): `claimbridge rehearse` in it
# downloads and builds nothing. IMAGE_REHEARSAL=no leaves it out.
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_REHEARSAL ?= yes
image: ## container images in _output/image (and the rehearsal image in _output/image/rehearse): OCI layout (crane push / skopeo copy) + docker tarballs, no engine needed
	@k8sbin="" && if [ "$(IMAGE_REHEARSAL)" = yes ]; then k8sbin="$$(hack/e2e-bins.sh | tail -n1),$$($(HEARTBEAT) k8sbins $(GO) run ./hack/k8sbins | tail -n1)"; fi && \
	cd e2e && $(HEARTBEAT) image $(GO) run ./cmd/image -o $(CURDIR)/_output/image -platforms $(IMAGE_PLATFORMS) -k8s-bin "$$k8sbin"

chart: ## package the chart into _output/claimbridge-<version>.tgz with the pinned Helm (installed into the cache)
	@mkdir -p _output
	@helm="$$(hack/tools.sh helm | tail -n1)" && $$helm package charts/claimbridge -d _output

# Built once into bin/, then run twice: on a fresh machine the build downloads and compiles
# every dependency first (CONTRIBUTING.md, "First run", has the time it takes), so say so before it starts.
example: ## translate an example workload, then audit all of them against the mixed example fleet
	@test -x bin/claimbridge || echo "example: building bin/claimbridge first; on a fresh machine Go downloads and compiles every dependency (about 6 minutes on 2 cores), later runs take seconds"
	@$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/claimbridge ./cmd/claimbridge
	bin/claimbridge translate -f examples/workloads/inference-l4.yaml
	@echo
	bin/claimbridge audit -f examples/workloads --fleet examples/fleets/mixed

test: unit deadcode e2e bench-smoke ## everything CI runs: unit tests with fuzz seed corpora, no dead code, the e2e suite, one pass of every benchmark

# The HTML report's browser tests open pages in the headless Chromium that hack/chromium.sh finds
# or installs from the distribution's packages; if it cannot, they skip and say why.
unit: ## unit tests of the root module with the race detector (includes the seed corpora of the fuzz targets)
	@chromium="$$(hack/chromium.sh | tail -n1)"; test -n "$$chromium" || echo "unit: no Chromium: the HTML report's browser tests skip"; \
	echo "CLAIMBRIDGE_CHROMIUM=$$chromium $(GO) test -race -count=1 $(PKGS)"; \
	CLAIMBRIDGE_CHROMIUM="$$chromium" $(HEARTBEAT) "unit (go test -race)" $(GO) test -race -count=1 $(PKGS)

FUZZ_TARGETS := \
	./translate:FuzzLoadPolicy \
	./translate:FuzzTranslatePod \
	./translate:FuzzLabelValue \
	./webhook:FuzzHandlerDecode \
	./webhook:FuzzDecodePodAsTheScheme \
	./internal/offline:FuzzCutover

fuzz: ## run every fuzz target for FUZZTIME each (default 60s)
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

bench: ## every benchmark, one after the other: ratios against baselines measured in the same run (see BENCHMARKS.md)
	@$(MAKE) --no-print-directory bench-unit
	@$(MAKE) --no-print-directory bench-e2e

# -p 1: one package at a time, built then run, so that no compiler shares the CPUs with a
# package's benchmarks (with a cold build cache, the first packages' figures were otherwise
# taken while the others compiled).
bench-unit: ## go test benchmarks of translate/, feasibility/, decide/, forecast/, inventory/ and webhook/, then their table of ratios
	@mkdir -p _output
	$(GO) test -p 1 -run='^$$' -bench=. -benchtime=$(BENCHTIME) -count=1 ./translate/... ./feasibility/... ./decide/... ./forecast/... ./inventory/ ./webhook/ | tee _output/bench.txt
	@$(GO) run ./hack/benchratio -ratios hack/benchratio/ratios.txt < _output/bench.txt | tee _output/bench.md

# The webhook under load against a no-op webhook, memory with a 5,000-node fleet and pod creation
# through a real control plane (builds the control-plane binaries first if needed); bounded by
# BENCH_E2E_TIMEOUT. BENCH_E2E_ARGS adds flags, e.g. BENCH_E2E_ARGS='-parts webhook'.
BENCH_E2E_TIMEOUT ?= 25m
BENCH_E2E_ARGS ?=
bench-e2e: ## e2e benchmarks (e2e/bench): webhook vs no-op, memory, pod creation through kube-apiserver
	@mkdir -p _output
	@bins="$$(hack/e2e-bins.sh | tail -n1)" && \
	(cd e2e && CLAIMBRIDGE_K8S_BIN="$$bins" $(GO) run ./bench -timeout $(BENCH_E2E_TIMEOUT) $(BENCH_E2E_ARGS) > ../_output/bench-e2e.md) && \
	cat _output/bench-e2e.md

# Every benchmark once, on small inputs, so that a benchmark whose input no longer means what it
# measures (a pod that stopped being translated, a fleet that no longer fits) fails here rather
# than in the next make bench. It measures nothing: its output goes to _output/bench-smoke*.
bench-smoke: ## one pass of every benchmark on small inputs (part of make test; about 45 s warm)
	@mkdir -p _output
	HEARTBEAT_TO=2 $(HEARTBEAT) "bench-smoke (go test -bench)" $(GO) test -run='^$$' -bench=. -benchtime=1x -count=1 ./translate/... ./feasibility/... ./decide/... ./forecast/... ./inventory/ ./webhook/ > _output/bench-smoke.txt || { cat _output/bench-smoke.txt; exit 1; }
	@bins="$$(hack/e2e-bins.sh | tail -n1)" && \
	(cd e2e && CLAIMBRIDGE_K8S_BIN="$$bins" HEARTBEAT_TO=3 $(HEARTBEAT) "bench-smoke (e2e/bench)" $(GO) run ./bench -timeout 5m -webhook-nodes 100 -rounds 1 -run-for 300ms -warmup 200ms \
		-nodes 40 -pods 24 -batch 8 -clients 2 > ../_output/bench-smoke-e2e.md 2> ../_output/bench-smoke-e2e.log) 3>&2 || { tail -n 20 _output/bench-smoke-e2e.log; exit 1; }
	@echo "bench-smoke: every benchmark ran once (_output/bench-smoke.txt, _output/bench-smoke-e2e.md)"

# No Grafana runs here: the picture is the dashboard JSON's panels (titles, layout, queries) rendered
# into a page and shot with the headless Chromium that hack/chromium.sh finds or installs.
dashboard: ## render docs/dashboard.png from the panels of charts/claimbridge/files/dashboard.json (headless Chromium)
	@chromium="$$(hack/chromium.sh | tail -n1)" && CLAIMBRIDGE_CHROMIUM="$$chromium" $(GO) run ./hack/dashboard

clidocs: ## regenerate docs/reference/cli from the cobra commands (hack/clidocs; its test checks for drift)
	$(GO) run ./hack/clidocs

apidocs: ## regenerate the policy's field reference and docs/reference/labels.md from the comments of api/ (hack/apidocs; its test checks for drift)
	$(GO) run ./hack/apidocs

# deadcode lists the functions no binary of the module reaches; internal/testing/ is test
# support (only tests, hack/ and e2e/ use it), everything else must be reached.
deadcode: ## fail when a function outside internal/testing/ is unreachable from the binaries (deadcode, pinned in hack/tools.sh)
	@dc="$$(hack/tools.sh deadcode | tail -n1)" && out="$$(HEARTBEAT_TO=2 $(HEARTBEAT) deadcode $$dc ./... | grep -v '^internal/testing/' || true)"; \
		test -z "$$out" || { echo "deadcode: unreachable outside internal/testing/:"; echo "$$out"; exit 1; }

verify: fmt-check vet lint tidy-check import-check size-check deadcode ## gofmt, go vet, golangci-lint, go mod tidy drift, import rules, function and package sizes, untracked files
	@test -z "$$(git status --porcelain --untracked-files=all)" || { echo "verify: the tree has changes or untracked files:"; git status --short; exit 1; }

fmt: ## gofmt -w every tracked .go file (both modules)
	gofmt -w $$(git ls-files '*.go')

fmt-check: ## fail when a tracked .go file is not gofmt-formatted (make fmt fixes it)
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; test -z "$$out" || { echo "gofmt needed (make fmt):"; echo "$$out"; exit 1; }

vet: ## go vet both modules
	$(GO) vet $(PKGS)
	cd e2e && $(GO) vet ./...

lint: ## golangci-lint (pinned in hack/tools.sh) on both modules
	@lint="$$(hack/tools.sh golangci-lint | tail -n1)" && $$lint run $(PKGS) && cd e2e && $$lint run ./...

tidy-check: ## fail when go mod tidy would change go.mod or go.sum of either module
	@for d in . e2e; do \
		(cd $$d && cp go.mod /tmp/claimbridge-go.mod.$$$$ && cp go.sum /tmp/claimbridge-go.sum.$$$$ && \
		 $(GO) mod tidy && \
		 if ! git diff --quiet -- go.mod go.sum; then echo "verify: go mod tidy changes $$d/go.mod or go.sum"; git diff -- go.mod go.sum; \
		   cp /tmp/claimbridge-go.mod.$$$$ go.mod; cp /tmp/claimbridge-go.sum.$$$$ go.sum; exit 1; fi; \
		 rm -f /tmp/claimbridge-go.mod.$$$$ /tmp/claimbridge-go.sum.$$$$) || exit 1; \
	done

import-check: ## translate/ stays pure (no client, context, logger or clock), the packages keep their layers, every reason code has its catalog entry
	$(GO) test -count=1 -run TestTranslateIsPure ./translate/
	$(GO) test -count=1 ./hack/layers/ ./hack/reasons/

# Function literals count as part of the function that holds them; the product code is every
# non-test .go file outside hack/, internal/testing/, e2e/ and testdata/ (hack/sizes says how it counts).
size-check: ## no product function over 120 lines or 6 parameters, translate/ ≤ 8,000 lines and every other package ≤ 5,000 (hack/sizes)
	$(GO) run ./hack/sizes

include e2e/Makefile.inc
