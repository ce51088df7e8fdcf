# toolctl: every target creates the virtual environment it needs, so each works alone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: install compile check test lint docs demo bench clean mcp-servers conformance pulsar-start pulsar-stop pulsar-status serve-clients

# The distribution was called "toolctl" before it became toolctl-cli (that name on PyPI is
# someone else's): an older checkout's install and its egg-info go first, or its entry
# points would register every runtime twice.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip uninstall --quiet --yes toolctl 2>/dev/null || true
	rm -rf toolctl.egg-info
	$(PY) -m pip install --quiet -e '.[dev]' --config-settings editable_mode=compat
	touch $@

# Byte-code even where PYTHONDONTWRITEBYTECODE is set: start-up time is part of the product.
compile: install
	$(PY) -m compileall -q toolctl plugins

install: $(VENV)/.installed

# The MCP servers the tests run, none written here but tests/mcp/servers/: the official SDK
# 2.x with the reference time server in a venv of their own (the dev venv has SDK 1.x), and
# the TypeScript reference server from npm (skipped, with a note, where there is no npm).
MCP2 ?= .venv-mcp2
NODE_SERVERS := tests/mcp/node

$(MCP2)/.installed: Makefile
	$(PYTHON) -m venv $(MCP2)
	$(MCP2)/bin/python -m pip install --quiet --upgrade pip
	$(MCP2)/bin/python -m pip install --quiet 'mcp==2.3.0' 'mcp-server-time==2026.10.19'
	touch $@

$(NODE_SERVERS)/node_modules/.installed: $(NODE_SERVERS)/package-lock.json
	@if command -v npm >/dev/null; then \
	  cd $(NODE_SERVERS) && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error \
	  && touch node_modules/.installed; \
	else echo "npm not found: the TypeScript MCP server tests will skip"; fi

mcp-servers: $(MCP2)/.installed $(NODE_SERVERS)/node_modules/.installed

# MCP clients nobody here wrote, for tests/serve: the MCP Inspector (npm) and the Node 22 it
# needs, pinned by tests/serve/node/package-lock.json (the tests skip, with a note, without npm)
SERVE_CLIENTS := tests/serve/node

$(SERVE_CLIENTS)/node_modules/.installed: $(SERVE_CLIENTS)/package-lock.json
	@if command -v npm >/dev/null; then \
	  cd $(SERVE_CLIENTS) && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error \
	  && touch node_modules/.installed; \
	else echo "npm not found: the MCP Inspector tests will skip"; fi

serve-clients: $(SERVE_CLIENTS)/node_modules/.installed

# The official MCP conformance suite and the Node 22 it runs on, both from npm, pinned by
# tests/mcp/conformance/node/package-lock.json (tests/mcp/test_conformance.py; skipped,
# with a note, without npm)
CONFORMANCE := tests/mcp/conformance/node

$(CONFORMANCE)/node_modules/.installed: $(CONFORMANCE)/package-lock.json
	@if command -v npm >/dev/null; then \
	  cd $(CONFORMANCE) && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error \
	  && touch node_modules/.installed; \
	else echo "npm not found: the MCP conformance tests will skip"; fi

conformance: $(CONFORMANCE)/node_modules/.installed

# The in-process tier, for the edit-test loop (under a minute): every test but those that need
# a broker, podman, MCP servers, a server or a toolctl process of their own (tests/conftest.py
# marks those `integration` by path and fixture, and the bounds tested at full size). `make
# test` runs everything, as CI does. Byte-code is written even where PYTHONDONTWRITEBYTECODE
# is set: without it each worker compiles toolctl and rewrites every test module's asserts
# again, ~10 s of each run.
check: install
	PYTHONDONTWRITEBYTECODE= FUZZ_SCALE=0.25 $(PY) -m pytest -q -n $(TEST_WORKERS) -m "not integration"

test: install mcp-servers serve-clients conformance
	$(PY) -m pytest -q -n $(TEST_WORKERS)

lint: install
	$(BIN)/ruff check toolctl tests bench plugins scripts
	$(BIN)/ruff format --check toolctl tests bench plugins scripts
	$(BIN)/mypy

# The command reference (docs/reference/cli.md), regenerated from the commands' --help.
docs: install
	$(PY) scripts/cli_reference.py --write

demo: compile
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

TEST_WORKERS ?= auto

# pulsar_cluster needs a real Apache Pulsar (`make pulsar-start`); without one it says so and
# passes. With one it takes ~10 minutes (2,000 calls of a 0.1 s handler, four times).
BENCHES ?= registry registry_scale run_local http_batch pulsar_client recommend learn_bfcl mcp_client mcp_run mcp_warm pulsar_cluster

# Each benchmark prints ratios measured side by side in one run; `make bench BENCHES=recommend`.
bench: compile
	cd bench && for b in $(BENCHES); do echo "== $$b"; ../$(PY) $$b.py || exit 1; done

# A real Apache Pulsar standalone (Java 17 and Maven): fetched into ~/.cache/toolctl once,
# kept in ~/.local/state/toolctl/pulsar-standalone. `make test` then runs the cluster tests:
#   make pulsar-start && TOOLCTL_TEST_PULSAR_URL=$$(scripts/pulsar-standalone.sh url) \
#     TOOLCTL_TEST_PULSAR_ADMIN_URL=$$(scripts/pulsar-standalone.sh admin-url) make test
pulsar-start:
	bash scripts/pulsar-standalone.sh start

pulsar-stop:
	bash scripts/pulsar-standalone.sh stop

pulsar-status:
	bash scripts/pulsar-standalone.sh status

clean:
	rm -rf $(VENV) $(MCP2) $(NODE_SERVERS)/node_modules $(SERVE_CLIENTS)/node_modules .pytest_cache .mypy_cache .ruff_cache
