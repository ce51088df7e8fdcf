# toolctl: every target creates the virtual environment it needs, so each works alone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: install compile test lint docs demo bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]' --config-settings editable_mode=compat
	touch $@

# Byte-code even where PYTHONDONTWRITEBYTECODE is set: start-up time is part of the product.
compile: install
	$(PY) -m compileall -q toolctl plugins

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q -n $(TEST_WORKERS)

lint: install
	$(BIN)/ruff check toolctl tests bench plugins scripts
	$(BIN)/ruff format --check toolctl tests bench plugins scripts
	$(BIN)/mypy

# The README's command reference, regenerated from the commands' --help.
docs: install
	$(PY) scripts/cli_reference.py --write

demo: compile
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

TEST_WORKERS ?= auto

BENCHES ?= registry run_local http_batch pulsar_client recommend

# Each benchmark prints ratios measured side by side in one run; `make bench BENCHES=recommend`.
bench: compile
	cd bench && for b in $(BENCHES); do echo "== $$b"; ../$(PY) $$b.py || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
