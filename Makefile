# aicr.runtime — every set-up step lives here, so a fresh clone needs only
# `make demo` or `make test`. Nothing may depend on what was installed by hand.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
BUILD := .build
COLLECTIONS := $(CURDIR)/$(BUILD)/collections
SANITY_DIR ?= $(BUILD)/sanity
SANITY_ROOT := $(SANITY_DIR)/ansible_collections/aicr/runtime
# e.g. make sanity SANITY_DIR=.build/sanity-recipe SANITY_ARGS='plugins/modules/recipe_resolve.py'
SANITY_ARGS ?=
VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)
TARBALL := $(BUILD)/dist/aicr-runtime-$(VERSION).tar.gz
SHARED ?= $(abspath ../shared)
GALAXY_VENV := $(BUILD)/venv-galaxy

export AICR_SHARED := $(SHARED)
# tests/integration/test_galaxy_import.py runs the real galaxy-importer (its venv is built below).
export AICR_REQUIRE_GALAXY_IMPORTER := 1
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_NOCOLOR := 1
export PATH := $(CURDIR)/$(BIN):$(PATH)

# pytest-xdist workers for the unit suite: --dist loadgroup, with tests/unit/conftest.py grouping each file's tests on
# one worker except the files that wait far more than they compute (XDIST_SPREAD), so 4 workers on 2 cores overlap
# those waits. PYTEST_WORKERS=0 runs in this process.
PYTEST_WORKERS ?= 4
PYTEST_PARALLEL := $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadgroup)
# Integration is mostly CPU-bound (Ansible), but 2 workers still left a quarter of the 2 cores idle between waits on
# readiness: a third worker fills most of it. Each worker is a pytest session of its own and starts its own control
# plane. INTEGRATION_WORKERS=0 runs in this process.
INTEGRATION_WORKERS ?= 3
INTEGRATION_PARALLEL := $(if $(filter 0,$(INTEGRATION_WORKERS)),,-n $(INTEGRATION_WORKERS) --dist loadfile)
# Unit tests are hermetic: they run on a PATH without the venv's helm and kubectl and with an empty binary cache, and
# tests/unit/conftest.py sets AICR_LAB_DISABLED so a unit test that asks for the lab (control plane, helm, OCI
# registry) fails saying so. A test that needs a cluster or a binary belongs in tests/integration.
UNIT_PATH ?= /usr/bin:/bin

.PHONY: all venv helm controlplane system-deps collection unit sanity lint integration molecule test demo bench oracles oracles-schema ee-context docs changelog-lint clean

all: test

# --- set-up -----------------------------------------------------------------

$(VENV)/.installed: requirements.txt requirements-dev.txt tests/lab/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e tests/lab
	touch $@

venv: $(VENV)/.installed

$(BIN)/helm: scripts/install-helm $(VENV)/.installed
	$(PY) scripts/install-helm --dest $(BIN)

helm: $(BIN)/helm

# The lab's Kubernetes control plane (kube-apiserver, controller-manager, scheduler, kubectl,
# etcd, kwok), built from the Go modules pinned in tests/controlplane into
# ~/.cache/aicr-runtime/controlplane (outside the clone); a no-op once built.
controlplane: $(VENV)/.installed
	$(BIN)/aicr-lab build --link-dir $(BIN) > /dev/null

# Debian packages the suites need (the local OCI registry); skips what is installed.
system-deps:
	bash scripts/install-system-deps

# Build the collection artifact and install it the way users do.
collection: venv
	rm -rf $(BUILD)/dist && mkdir -p $(BUILD)/dist
	$(BIN)/ansible-galaxy collection build --force --output-path $(BUILD)/dist .
	$(BIN)/ansible-galaxy collection install --force -p $(COLLECTIONS) $(TARBALL)

# --- suites -----------------------------------------------------------------

unit: venv
	env PATH=$(UNIT_PATH) AICR_CACHE_DIR=$(CURDIR)/$(BUILD)/no-lab-binaries $(PY) -m pytest $(PYTEST_PARALLEL) tests/unit

# ansible-test insists on running inside ansible_collections/<ns>/<name> and lists
# files through git: sanity runs on a fresh git copy of the tracked (plus new,
# unignored) files, from its own venv holding only ansible-core, so the sanity
# tools' pins never fight the dev pins. ansible-test fetches get-pip.py from a
# host this network cannot reach; scripts/ansible-test-get-pip.py stands in.
SANITY_VENV := .venv-sanity
ANSIBLE_CORE_PIN := $(shell sed -n 's/^ansible-core==//p' requirements-dev.txt)

$(SANITY_VENV)/.installed: requirements-dev.txt
	test -x $(SANITY_VENV)/bin/python || $(PYTHON) -m venv $(SANITY_VENV)
	$(SANITY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check ansible-core==$(ANSIBLE_CORE_PIN)
	touch $@

sanity: $(SANITY_VENV)/.installed
	mkdir -p $(HOME)/.ansible/test/cache
	for v in 24_2 25_0 25_1 25_2 25_3; do cp scripts/ansible-test-get-pip.py $(HOME)/.ansible/test/cache/get_pip_$$v.py; done
	rm -rf $(SANITY_DIR) && mkdir -p $(SANITY_ROOT)
	git ls-files -z --cached --others --exclude-standard | \
	  while IFS= read -r -d '' f; do [ -e "$$f" ] && printf '%s\0' "$$f"; done | \
	  xargs -0 cp --parents -t $(SANITY_ROOT)
	cd $(SANITY_ROOT) && git init -q && git add -A && \
	  $(STATIC_NICE) $(CURDIR)/$(SANITY_VENV)/bin/ansible-test sanity --color no --python 3.11 \
	  --requirements --local $(SANITY_ARGS)

lint: collection
	$(STATIC_NICE) $(BIN)/ansible-lint --profile production --offline

# galaxy-importer has pins of its own: a separate venv under .build (ignored by git, lint and the build).
$(GALAXY_VENV)/.installed: requirements-dev.txt
	test -x $(GALAXY_VENV)/bin/python || $(PYTHON) -m venv $(GALAXY_VENV)
	$(GALAXY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check galaxy-importer==0.4.44 \
	  ansible-core==$(ANSIBLE_CORE_PIN) ansible-lint==26.10.1
	touch $@

# Reference pages (docs/reference) from the plugins' DOCUMENTATION and the roles' argument specs.
docs: venv
	$(PY) scripts/gen-docs

changelog-lint: venv
	$(STATIC_NICE) $(BIN)/antsibull-changelog lint

# --durations: the slowest steps of every run are in its log (issue 37: the suite's 20-minute budget is spent there)
integration: collection helm controlplane system-deps $(GALAXY_VENV)/.installed
	$(BIN)/pytest $(INTEGRATION_PARALLEL) --durations=30 tests/integration

# molecule's ansible-native scenarios (extensions/molecule): `default` starts the local
# lab that the role scenarios share, and stops it at the end.
molecule: collection helm controlplane
	$(BIN)/molecule test --all

# After unit, everything else runs at once in one make (so the collection they share is built once, before any of
# them starts): integration and molecule, whose waits on readiness leave CPU idle when run one after the other, and
# the static checks (sanity, lint, changelog-lint), which use one core, beside them under `nice -n 19`, taking only
# the CPU the suites leave. --output-sync keeps each target's log in one piece, printed when it ends.
# The set-up those need (helm, the control plane, the OCI registry, the sanity and galaxy-importer venvs: downloads and
# installs, mostly waiting on I/O) is done while unit runs; unit's PATH and binary cache hold none of it.
STATIC_NICE ?=
SUITES_SETUP := helm controlplane system-deps $(GALAXY_VENV)/.installed $(SANITY_VENV)/.installed
test:
	$(MAKE) --no-print-directory -j --output-sync=target unit $(SUITES_SETUP)
	$(MAKE) --no-print-directory -j --output-sync=target STATIC_NICE='nice -n 19' sanity lint changelog-lint integration molecule

# Execution environment build context (the image build itself needs podman/docker).
ee-context: collection helm
	rm -rf $(BUILD)/ee $(BUILD)/ee-stage && mkdir -p $(BUILD)/ee-stage
	cp $(TARBALL) $(BUILD)/ee-stage/aicr-runtime.tar.gz
	cp $(BIN)/helm $(BUILD)/ee-stage/helm
	$(BIN)/ansible-builder create -f execution-environment.yml --context $(BUILD)/ee --output-filename Containerfile

# --- the main job -----------------------------------------------------------

demo: collection helm controlplane system-deps
	$(PY) scripts/demo.py

# stdout is the JSON document alone: set-up output goes to stderr.
bench:
	@$(MAKE) --no-print-directory collection helm controlplane >&2
	@$(PY) tests/bench/run.py

# Goldens from values_schema's real peers (crdify v0.5.0, losisin/helm-values-schema-json v2.5.0, dadav/helm-schema 0.23.4)
# into tests/golden/schema, for the peers whose binaries are found ($$AICR_PEER_CRDIFY, $$AICR_PEER_LOSISIN, $$AICR_PEER_DADAV,
# else ~/.cache/aicr-runtime/peers/<tool>-<rev>/); each missing one is named with where it was looked for. The peers are
# built outside the clone from their public sources; nothing of theirs but their output is committed.
oracles-schema: venv
	$(PY) tests/oracles/schema_peers.py

# Goldens (tests/oracles/golden) regenerated from the real peer tools, built outside the clone and never committed:
# each tool's binary from its environment variable (AICR_ORACLE_AICR=/path/to/aicr, ...) or its default build path
# under ~/.cache/aicr-runtime/peers; a tool not found is named with where it was looked for, and its goldens kept.
# ORACLES='aicr' limits the run to the tools named (and then skips oracles-schema, which runs only when ORACLES is empty).
ORACLES ?=
oracles: venv
	@if [ -z "$(ORACLES)" ]; then $(MAKE) --no-print-directory oracles-schema; fi
	$(PY) tests/oracles/run.py $(ORACLES)

clean:
	rm -rf $(BUILD) $(VENV) $(SANITY_VENV)
