# aicr.runtime — every set-up step lives here, so a fresh clone needs only
# `make demo` or `make test`. Nothing may depend on what was installed by hand.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
BUILD := .build
COLLECTIONS := $(CURDIR)/$(BUILD)/collections
SANITY_ROOT := $(BUILD)/sanity/ansible_collections/aicr/runtime
VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)
TARBALL := $(BUILD)/dist/aicr-runtime-$(VERSION).tar.gz
SHARED ?= $(abspath ../shared)

export AICR_SHARED := $(SHARED)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_NOCOLOR := 1
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: all venv helm collection unit sanity lint integration test demo bench clean

all: test

# --- set-up -----------------------------------------------------------------

$(VENV)/.installed: requirements.txt requirements-dev.txt tests/emulators/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e tests/emulators
	touch $@

venv: $(VENV)/.installed

$(BIN)/helm: scripts/install-helm $(VENV)/.installed
	$(PY) scripts/install-helm --dest $(BIN)

helm: $(BIN)/helm

# Build the collection artifact and install it the way users do.
collection: venv
	rm -rf $(BUILD)/dist && mkdir -p $(BUILD)/dist
	$(BIN)/ansible-galaxy collection build --force --output-path $(BUILD)/dist .
	$(BIN)/ansible-galaxy collection install --force -p $(COLLECTIONS) $(TARBALL)

# --- suites -----------------------------------------------------------------

unit: venv
	$(BIN)/pytest tests/unit

# ansible-test insists on running inside ansible_collections/<ns>/<name>: sanity
# runs on a copy of the files git tracks (plus new, unignored ones).
sanity: venv
	rm -rf $(BUILD)/sanity && mkdir -p $(SANITY_ROOT)
	git ls-files -z --cached --others --exclude-standard | \
	  while IFS= read -r -d '' f; do [ -e "$$f" ] && printf '%s\0' "$$f"; done | \
	  xargs -0 cp --parents -t $(SANITY_ROOT)
	cd $(SANITY_ROOT) && $(CURDIR)/$(BIN)/ansible-test sanity --color no --python 3.11 \
	  --requirements --venv

lint: collection
	$(BIN)/ansible-lint --profile production --offline

integration: collection helm
	$(BIN)/pytest tests/integration

test: unit sanity lint integration

# --- the main job -----------------------------------------------------------

demo: collection helm
	$(BIN)/ansible-playbook -i examples/inventory/hosts.yml playbooks/demo.yml

bench: collection helm
	$(PY) tests/bench/run.py

clean:
	rm -rf $(BUILD) $(VENV)
