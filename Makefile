# Two commands on a fresh machine: `make test` and `make serve`.
# Each creates .venv and installs what it needs by itself.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test serve lint typecheck unit bench clean browser postgres

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "toolbound needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) browser postgres
	$(BIN)/pytest

# The web view's browser tests drive Debian's chromium (playwright cannot
# download its own browsers here). Quiet when it is already installed.
CHROMIUM := /usr/bin/chromium
browser:
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends chromium >/dev/null || exit 1; \
	  else \
	    echo "The browser tests need Chromium; run: sudo apt-get install -y chromium" >&2; \
	    exit 1; \
	  fi; \
	fi

# The store's tests run against a real PostgreSQL too: they start their own
# server (initdb + pg_ctl in a temp dir) from Debian's postgresql package.
# Quiet when initdb is already there (PG_BIN names another bin folder).
postgres:
	@if [ -z "$$PG_BIN" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
	    && ! command -v pg_config >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's postgresql for the store tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends postgresql >/dev/null || exit 1; \
	  else \
	    echo "The store tests need PostgreSQL; run: sudo apt-get install -y postgresql" >&2; \
	    exit 1; \
	  fi; \
	fi

test: browser postgres lint typecheck unit

serve: $(STAMP)
	$(BIN)/toolbound serve --workspace .

bench: $(STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
