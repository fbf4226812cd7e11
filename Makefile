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

# $(call apt_need,PACKAGE,WHO): as root, install Debian's PACKAGE (quietly);
# otherwise stop with the one command to run.
apt_need = if [ "$$(id -u)" = 0 ]; then \
	  echo "installing Debian's $(1) for $(2)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $(1) >/dev/null || exit 1; \
	else \
	  echo "$(2) need $(1); run: sudo apt-get install -y $(1)" >&2; exit 1; \
	fi

# The web view's browser tests drive Debian's chromium (playwright cannot
# download its own browsers here). Quiet when it is already installed.
CHROMIUM := /usr/bin/chromium
browser:
	@if [ ! -x $(CHROMIUM) ]; then $(call apt_need,chromium,the browser tests); fi

# The store's tests run against a real PostgreSQL too: they start their own
# server (initdb + pg_ctl in a temp dir) from Debian's postgresql package.
# Quiet when initdb is already there (PG_BIN names another bin folder).
postgres:
	@if [ -z "$$PG_BIN" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  $(call apt_need,postgresql,the store tests); \
	fi

test: browser postgres lint typecheck unit

serve: $(STAMP)
	$(BIN)/toolbound serve --workspace .

bench: $(STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
