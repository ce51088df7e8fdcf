# toolctl: every target creates the virtual environment it needs, so each works alone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: install test lint demo bench engines clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]' --config-settings editable_mode=compat
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q

lint: install
	$(BIN)/ruff check toolctl tests bench plugins
	$(BIN)/ruff format --check toolctl tests bench plugins
	$(BIN)/mypy

demo: install
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

bench: install
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
