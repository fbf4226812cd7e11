# Two commands on a fresh machine: `make test` and `make serve`.
# Each creates .venv and installs what it needs by itself.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test serve lint typecheck unit unit-quick bench clean browser bubblewrap postgres node harness

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

# The agent harnesses the harness tests run (Claude Code, Codex CLI, Gemini CLI,
# opencode), pinned by tests/harness/package-lock.json: installed from the npm
# registry once and reused while the lock is unchanged (the stamp names the lock
# they came from, as tests/harness/harnesses.py checks). `npm install --no-save`
# installs exactly the lock; `npm ci` refuses it, as the registry lacks some of
# opencode's other-platform packages the lock cannot list.
NPM := /usr/bin/npm
node:
	$(call debian_package,$(NPM),npm,the harness and TypeScript client tests)

HARNESS_DIR := tests/harness
HARNESS_NPM := $(HARNESS_DIR)/node_modules/.toolbound-lock-sha256
$(HARNESS_NPM): $(HARNESS_DIR)/package-lock.json | node
	cd $(HARNESS_DIR) && npm install --no-save --no-audit --no-fund --loglevel=error
	@sha256sum $(HARNESS_DIR)/package-lock.json | cut -d' ' -f1 | tr -d '\n' > $@

unit: $(STAMP) browser bubblewrap postgres $(HARNESS_NPM)
	$(BIN)/pytest

# The quick tier: every test but the slow ones (browser, PostgreSQL, big data,
# real harnesses; tests/conftest.py marks them). `make test` runs them all.
unit-quick: $(STAMP) bubblewrap
	$(BIN)/pytest -m "not slow"

# A Debian package the tests need: installed with apt-get when missing and
# running as root, else the one command to run. Quiet when already there.
# $(call debian_package,BINARY,PACKAGE,WHO NEEDS IT)
define debian_package
	@if [ ! -x $(1) ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's $(2) for $(3)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends $(2) >/dev/null || exit 1; \
	  else \
	    echo "$(3) need $(2); run: sudo apt-get install -y $(2)" >&2; \
	    exit 1; \
	  fi; \
	fi
endef

# The web view's browser tests drive Debian's chromium (playwright cannot
# download its own browsers here).
CHROMIUM := /usr/bin/chromium
browser:
	$(call debian_package,$(CHROMIUM),chromium,the browser tests)

# The Bash sandbox (--sandbox) runs commands under bubblewrap.
BWRAP := /usr/bin/bwrap
bubblewrap:
	$(call debian_package,$(BWRAP),bubblewrap,the sandbox tests)

# The store's tests also run against a real PostgreSQL that they start
# themselves (initdb and pg_ctl in a temp dir) from Debian's postgresql
# package; PG_BIN names another bin folder.
INITDB := $(or $(firstword $(wildcard $(PG_BIN)/initdb /usr/lib/postgresql/*/bin/initdb)),/usr/lib/postgresql/bin/initdb)
postgres:
	$(call debian_package,$(INITDB),postgresql,the store tests)

test: browser bubblewrap postgres lint typecheck unit

# Every harness over stdio and HTTP (a few minutes); `make test` runs one of them.
harness: $(STAMP) $(HARNESS_NPM)
	TOOLBOUND_HARNESSES=all $(BIN)/pytest tests/harness

serve: $(STAMP)
	$(BIN)/toolbound serve --workspace .

bench: $(STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
