# canaryapp — the front door. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

CACHE ?= $(or $(CANARYAPP_CACHE),$(HOME)/.cache/canaryapp)
NODE_MAJOR := $(shell sed -n 's/^NODE_MAJOR=//p' e2e/toolchain/versions.env)
# Every target runs the project's pinned Node, installed by `make deps`.
export PATH := $(CACHE)/node-$(NODE_MAJOR)/node_modules/node/bin:$(PATH)

# Local tools are run directly: npx adds a second of npm start-up to every call.
BIN := node_modules/.bin
PROFILE ?= cluster
ARGS ?=
PREFIX ?= $(HOME)/.local

##@ General

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m [PROFILE=api|cluster] [ARGS=...]\n"} \
	  /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Setup

.PHONY: deps
deps: ## Install everything a fresh machine needs (apt packages, Node, control plane) and npm packages
	e2e/toolchain/install-prerequisites.sh
	@$(MAKE) --no-print-directory node_modules/.package-lock.json

# npm ci only when package-lock.json changed since the last install.
node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

.PHONY: toolchain
toolchain: ## Build kube-apiserver, controller-manager, scheduler, kubectl, etcd, kwok and helm; fetch Istio CRDs
	e2e/toolchain/build-control-plane.sh all
	e2e/toolchain/build-control-plane.sh helm

##@ Development

# What `make build` compiles: every file of the compiled folders (and the folders, whose times change when a file is
# added or removed). It runs again only when one of them, the TypeScript configuration or the npm packages are newer
# than its last run, so a warm `make demo` does not wait for a type-check of unchanged sources.
# (`src/.`, not `src`: `test` and `bench` would name this Makefile's targets.)
BUILD_INPUTS := $(shell find src/. test/. e2e/. bench/. tools/. -path bench/./results -prune -o \( -type f -o -type d \) -print) \
  tsconfig.json tsconfig.build.json
BUILD_STAMP := dist/.build-stamp

.PHONY: build
build: $(BUILD_STAMP) ## Compile TypeScript to dist/, type-check and bundle the dashboard's page (when a source changed)

$(BUILD_STAMP): node_modules/.package-lock.json $(BUILD_INPUTS)
	$(BIN)/tsc -p tsconfig.json
	$(BIN)/tsc -p src/dashboard/page/tsconfig.json
	node dist/tools/dashboard/bundle.js
	@touch $@

.PHONY: lint
lint: node_modules/.package-lock.json ## ESLint and Prettier check
	$(BIN)/eslint --max-warnings=0 .
	$(BIN)/prettier --check .

.PHONY: typecheck
typecheck: node_modules/.package-lock.json ## Type-check without emitting
	$(BIN)/tsc -p tsconfig.json --noEmit
	$(BIN)/tsc -p src/dashboard/page/tsconfig.json

##@ Packaging

HELM_VERSION := $(shell sed -n 's/^HELM_VERSION=//p' e2e/toolchain/versions.env)
HELM := $(CACHE)/helm-v$(HELM_VERSION)/helm

.PHONY: chart
chart: ## Copy the CRDs of crds/ (the CanaryApp's, the analysis templates') into the Helm chart (charts/canaryapp/crds), their one source
	cp crds/canaryapp.yaml crds/analysis-templates.yaml charts/canaryapp/crds/

.PHONY: dashboard
dashboard: build ## Generate the Grafana dashboard (config/grafana, and the chart's copy) from tools/grafana
	node dist/tools/grafana/generate.js

.PHONY: flagger
flagger: ## Build the pinned Flagger (a peer of `make bench-peers`) from its Go module into the cache
	e2e/toolchain/build-control-plane.sh flagger

.PHONY: argo-rollouts
argo-rollouts: ## Build the pinned Argo Rollouts controller and CRDs (the second peer of `make bench-peers`) from its Go module into the cache
	e2e/toolchain/build-control-plane.sh argo-rollouts

.PHONY: helm
helm: ## Build the pinned helm from its Go module into the cache (`make test-integration` and `make test-e2e` test the chart with it)
	e2e/toolchain/build-control-plane.sh helm
	@echo "$(HELM)"

.PHONY: chromium
chromium: ## Install Debian's chromium package when missing (the dashboard's browser tests and screenshots drive it)
	e2e/toolchain/install-chromium.sh

# Debian's python3-scipy serves Debian's python3; PYTHON=... another that has scipy.
PYTHON ?= /usr/bin/python3

.PHONY: scipy
scipy: ## Install Debian's python3-scipy package when missing (the judge's Mann-Whitney test is checked against SciPy)
	PYTHON=$(PYTHON) e2e/toolchain/install-scipy.sh

.PHONY: judge-reference
judge-reference: build scipy ## Regenerate src/analysis/judge/scipy-reference.json: SciPy's answers to the judge's cases (tools/judge)
	node dist/tools/judge/cases.js | $(PYTHON) tools/judge/reference.py > src/analysis/judge/scipy-reference.json.tmp
	mv src/analysis/judge/scipy-reference.json.tmp src/analysis/judge/scipy-reference.json

.PHONY: metric-servers
metric-servers: ## Install Debian's influxdb (1.x), victoria-metrics and graphite-web when missing (the metric sources' integration tests start them)
	e2e/toolchain/install-metric-servers.sh

ISTIOCTL_VERSION := $(shell sed -n 's/^ISTIOCTL_VERSION=//p' e2e/toolchain/versions.env)
ISTIOCTL := $(CACHE)/istioctl-v$(ISTIOCTL_VERSION)/istioctl

.PHONY: istioctl
istioctl: ## Build the pinned istioctl from its Go module into the cache (`make test-e2e` checks the Istio objects with it)
	e2e/toolchain/build-control-plane.sh istioctl
	@echo "$(ISTIOCTL)"

GATEWAY_API_VERSION := $(shell sed -n 's/^GATEWAY_API_VERSION=//p' e2e/toolchain/versions.env)
GATEWAY_API_CRDS := $(CACHE)/gateway-api-v$(GATEWAY_API_VERSION)/crds.yaml

.PHONY: gateway-api-crds
gateway-api-crds: ## Fetch the pinned Gateway API CRDs (standard channel) from their Go module into the cache (for clusters started with --gateway-api; `make test-integration` and `make test-e2e` test them)
	e2e/toolchain/build-control-plane.sh gateway-api
	@echo "$(GATEWAY_API_CRDS)"

##@ Tests

# The commands a test runs (make demo, make bench, ...) run as a user runs them, not as part of this make's
# parallel jobs and held output.
ALONE := env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL

.PHONY: test
# build is the type check (tsc fails on any type error), so typecheck is not run a second time here.
# The e2e tests and the README's commands run side by side: each starts control planes of its own (ports, kubeconfigs
# and work directories are private to each), and both spend most of their time waiting on rollout intervals. Each
# one's output is printed whole when it ends (--output-sync).
test: deps build lint test-unit test-integration ## Everything: typecheck (build), lint, unit, integration, then e2e and README side by side
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-e2e test-docs

.PHONY: test-unit
test-unit: build ## Unit tests (no cluster)
	npm run --silent test:unit

.PHONY: test-integration
test-integration: build helm gateway-api-crds metric-servers scipy ## Integration tests against a local kube-apiserver (profile api)
	npm run --silent test:integration

.PHONY: test-e2e
test-e2e: build helm istioctl gateway-api-crds chromium ## End-to-end tests against a local cluster with kwok nodes (profile cluster), istioctl validate and analyze, the dashboard in Chromium
	$(ALONE) npm run --silent test:e2e

.PHONY: test-docs
test-docs: build ## Run every command README.md gives (make demo included), verbatim
	$(ALONE) npm run --silent test:docs

.PHONY: dashboard-screenshots
dashboard-screenshots: build chromium ## Screenshots of `kubectl canaryapp dashboard` during a rollout, into docs/ (DASHBOARD_SCREENSHOTS_DIR another folder)
	$(ALONE) node dist/e2e/cluster/with-cluster.js --profile cluster -- node dist/e2e/dashboard-screenshots.js

.PHONY: bench
bench: build ## Run the benchmarks, the scale table beside its floor (JSON: bench/results/ or BENCH_JSON; BENCH_APPS=1000,5000 the sizes, BENCH_ONLY=scale|scrape|planner|rollout|capacity|churn|floor one part (floor: the floor script alone under V8's defaults and under the controller's flags, BENCH_FLOOR_ROUNDS=3 rounds), BENCH_CHAOS=1, BENCH_SHARDS=1 the sharded replicas; churn, only with BENCH_ONLY=churn or BENCH_CHURN=1: 3 sharded replicas, one SIGKILLed and one added while apps roll out, BENCH_CHURN_APPS=5000 apps of which BENCH_CHURN_ROLLING=200 roll out)
	node --expose-gc dist/bench/run.js

.PHONY: bench-dashboard
bench-dashboard: build chromium ## The dashboard with many apps: RSS, its page's heap, API requests at rest and while apps roll out (BENCH_DASHBOARD_APPS=1000, BENCH_DASHBOARD_ROLLING=50; JSON: bench/results/ or BENCH_JSON)
	node dist/bench/dashboard.js

.PHONY: chaos
chaos: build ## Chaos runs (kills with restart delays 0/3/20 s, failover, API-server outage, Prometheus faults; an upgrade 1 → 32 → 64 shares, alone with ARGS=--only=upgrade)
	node dist/test/chaos/main.js $(ARGS)

.PHONY: bench-peers
# BENCH_PEERS_ONLY=canaryapp runs our part alone; a peer not named (e.g. BENCH_PEERS_ONLY=canaryapp,argo-rollouts)
# is not built.
bench-peers: build ## canaryapp, Flagger and Argo Rollouts side by side on one local cluster (builds the peers the first time; BENCH_PEERS_ONLY=argo-rollouts one of them)
	@only=",$${BENCH_PEERS_ONLY:-flagger,argo-rollouts},"; only=$${only// /}; \
	  if [[ $$only == *,flagger,* ]]; then e2e/toolchain/build-control-plane.sh flagger; fi; \
	  if [[ $$only == *,argo-rollouts,* ]]; then e2e/toolchain/build-control-plane.sh argo-rollouts; fi
	node dist/bench/peers.js $(ARGS)

##@ Run

.PHONY: demo
demo: deps build ## Run the demo scenario (ARGS=... passed through)
	node dist/e2e/demo/main.js $(ARGS)

.PHONY: install-plugin
install-plugin: build ## Link the kubectl plugin (kubectl canaryapp) into $(PREFIX)/bin (PREFIX=~/.local)
	mkdir -p "$(PREFIX)/bin"
	ln -sf "$(CURDIR)/bin/kubectl-canaryapp" "$(PREFIX)/bin/kubectl-canaryapp"
	@echo "installed $(PREFIX)/bin/kubectl-canaryapp; with $(PREFIX)/bin on PATH: kubectl canaryapp --help"

.PHONY: cluster-up
cluster-up: build ## Start a local control plane (PROFILE=api|cluster) until Ctrl-C; prints export KUBECONFIG=...
	node dist/e2e/cluster/up.js --profile $(PROFILE)

.PHONY: clean
clean: ## Remove build output
	rm -rf dist coverage .tmp
