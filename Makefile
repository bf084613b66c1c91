# lexweb: `make run` starts the product, `make test` passes the suite. See README.md.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)
# The dependencies are installed by uv, itself installed by pip at the version pyproject.toml
# pins: the same pins resolved to the same releases, in seconds instead of a minute and a half
# (15 s with the bytecode compiled, as pip does it, so that no process of the suite compiles it).
# Where uv cannot be installed or reach an index (an offline machine with a pip mirror), pip
# installs them as before.
UV_PIN := $(shell grep -o '"uv==[^"]*"' pyproject.toml | tr -d '"')
PYTEST_ARGS ?=
# Python writes its bytecode caches (__pycache__/, ignored by git) even where the environment says
# PYTHONDONTWRITEBYTECODE: every test worker, launched product and command would otherwise compile
# the project's modules again, and pytest rewrite the tests' asserts again (collecting the suite:
# 19 s the first time, 8 s after).
export PYTHONDONTWRITEBYTECODE :=
# The suite runs on this many pytest-xdist workers (each with its own test database, and its own
# launched product for the browser and process tests); files stay whole on one worker, handed
# out in the order tests/conftest.py gives them (the slow tiers first), not largest first.
# One more worker than cores: many tests wait on processes, sockets and browsers, and a third
# worker fills those waits (2 cores: 13 min 15 s instead of 14 min 3 s, both quiet).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
TEST_OPTS := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25
# The documentation site (mkdocs.yml, docs/) into var/site/. --strict: a broken link or anchor
# fails, so `make test` and `make test-fast` build it first. Material's banner about MkDocs 2.0
# is not ours to act on.
DOCS_BUILD := NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

.PHONY: install system-deps system-test-deps run test test-fast docs lint format bench faults provenance-eval clean-venv

install: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { \
	  echo "lexweb: error: $(PYTHON) is not installed. On Debian: apt-get install python3.11 python3.11-venv (or set PYTHON=/path/to/python3.11)."; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { \
	  echo "lexweb: error: $(PYTHON) is not Python 3.11; set PYTHON=/path/to/python3.11."; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "lexweb: error: cannot create $(VENV). On Debian: apt-get install python3.11-venv."; exit 1; }
	@echo "lexweb: installing pinned dependencies into $(VENV)…"
	@{ $(PY) -m pip install --quiet --disable-pip-version-check "$(UV_PIN)" && \
	   $(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) ".[dev]"; } || { \
	  echo "lexweb: uv could not install them (see above); installing with pip instead…"; \
	  $(PY) -m pip install --quiet --disable-pip-version-check ".[dev]"; } || { \
	  echo "lexweb: error: installing dependencies failed (see above); check network access to PyPI."; exit 1; }
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

run: install system-deps
	@$(PY) -m lexweb.launcher run

# Tesseract reads scanned pages. Installed when we may (root + apt-get); without it lexweb still
# runs and marks OCR as unavailable, but `make test` under CI=true fails its OCR tests.
# LibreOffice renders Word and Excel files to PDF, the same way; without it they are stored and
# searchable, "rendering unavailable"; under CI=true it must be there (installed or refused).
system-deps:
	@command -v tesseract >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "lexweb: installing Tesseract OCR (apt-get)…"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null; } || { \
	      echo "lexweb: error: could not install Tesseract; run: apt-get install tesseract-ocr tesseract-ocr-eng"; exit 1; }; \
	  else \
	    echo "lexweb: note: Tesseract is not installed (apt-get install tesseract-ocr); scanned pages will not be read."; \
	  fi; }
	@command -v soffice >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "lexweb: installing LibreOffice (Writer and Calc, no GUI) for rendering to PDF (apt-get)…"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libreoffice-writer-nogui libreoffice-calc-nogui >/dev/null; } || { \
	      echo "lexweb: error: could not install LibreOffice; run: apt-get install libreoffice-writer-nogui libreoffice-calc-nogui"; exit 1; }; \
	  elif [ "$$CI" = true ]; then \
	    echo "lexweb: error: LibreOffice (soffice) is required under CI=true: apt-get install libreoffice-writer-nogui libreoffice-calc-nogui"; exit 1; \
	  else \
	    echo "lexweb: note: LibreOffice is not installed (apt-get install libreoffice-writer-nogui libreoffice-calc-nogui); Word and Excel files will be stored and searchable but 'rendering unavailable'."; \
	  fi; }

# Browser tests drive Debian's Chromium. Installed here when we may (root + apt-get); under
# CI=true the browser tests fail rather than skip when it is missing.
system-test-deps:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "lexweb: installing Chromium for the browser tests (apt-get)…"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || { \
	      echo "lexweb: error: could not install chromium; run: apt-get install chromium"; exit 1; }; \
	  else \
	    echo "lexweb: note: Chromium is not installed (apt-get install chromium); browser tests will not run."; \
	  fi; }
	@ldconfig -p | grep -q 'libgomp\.so\.1' || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "lexweb: installing libgomp1 for the tests' real llama.cpp server (apt-get)…"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libgomp1 >/dev/null; } || { \
	      echo "lexweb: error: could not install libgomp1; run: apt-get install libgomp1"; exit 1; }; \
	  else \
	    echo "lexweb: note: libgomp1 is not installed (apt-get install libgomp1); the llamacpp tests will fail."; \
	  fi; }

test: install system-deps system-test-deps
	@$(DOCS_BUILD)
	@$(PY) -m lexweb.launcher test $(TEST_OPTS) $(PYTEST_ARGS)

# Without the slow tiers: no launched product, no browser, no test marked slow (markers in
# pyproject.toml).
test-fast: install system-deps system-test-deps
	@$(DOCS_BUILD)
	@$(PY) -m lexweb.launcher test $(TEST_OPTS) -m "not browser and not product and not slow" $(PYTEST_ARGS)

docs: install
	@$(DOCS_BUILD)
	@echo "lexweb: documentation built in var/site/ (open var/site/index.html)."

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	@$(PY) -m lexweb.launcher manage makemigrations --check --dry-run

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	@$(PY) -m lexweb.launcher bench

# The evidence registry against attacks and legitimate documents of ../shared (JSON): refusal
# and false-refusal rates and the share distributions behind LEXWEB_ARTIFACT_MATCH_THRESHOLD.
provenance-eval: install system-deps
	@$(PY) -m bench.provenance_eval

# Each fault scenario (kills of workers, web server, PostgreSQL; Ctrl-C) against a launched
# lexweb, FAULT_RUNS times (default 20); one JSON line of counts per scenario.
FAULT_RUNS ?= 20
faults: install system-deps
	@$(PY) -m bench.faults --runs $(FAULT_RUNS) $(FAULT_ARGS)

clean-venv:
	rm -rf $(VENV)
