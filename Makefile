# lexweb: `make run` starts the product, `make test` passes the suite. See README.md.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)
PYTEST_ARGS ?=

.PHONY: install run test lint format bench clean-venv

install: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { \
	  echo "lexweb: error: $(PYTHON) is not installed. On Debian: apt-get install python3.11 python3.11-venv (or set PYTHON=/path/to/python3.11)."; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { \
	  echo "lexweb: error: $(PYTHON) is not Python 3.11; set PYTHON=/path/to/python3.11."; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "lexweb: error: cannot create $(VENV). On Debian: apt-get install python3.11-venv."; exit 1; }
	@echo "lexweb: installing pinned dependencies into $(VENV)…"
	@$(PY) -m pip install --quiet --disable-pip-version-check ".[dev]" || { \
	  echo "lexweb: error: installing dependencies failed (see above); check network access to PyPI."; exit 1; }
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

run: install
	@$(PY) -m lexweb.launcher run

test: install
	@$(PY) -m lexweb.launcher test $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@$(PY) -m lexweb.launcher manage makemigrations --check --dry-run

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	@$(PY) -m lexweb.launcher bench

clean-venv:
	rm -rf $(VENV)
