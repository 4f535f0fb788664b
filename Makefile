# Two commands set up a fresh machine: `make run` and `make test`.
PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
BIN := $(VENV)/bin
CONFIG ?= config/gateway.yaml
HOST ?= 127.0.0.1
PORT ?= 8000

CHECKOV_ENV := $(TOOLS)/checkov
CHECKOV_LOCK := tools/checkov/requirements.txt

.PHONY: install run migrate test lint typecheck pytest checkov chromium npm-tools clean bench bench-tools bench-usage clients soak

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet uv==$(UV_VERSION)

# The virtual environment is rebuilt from the lock file whenever the lock changes.
$(VENV)/.installed: uv.lock pyproject.toml | $(UV)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --frozen --python $(PYTHON)
	touch $@

install: $(VENV)/.installed

# checkov's pins conflict with ours (importlib-metadata), so it gets its own environment, built
# from a hash-locked requirements file. Regenerate the lock with:
#   $(UV) pip compile tools/checkov/requirements.in --python-version 3.11 --generate-hashes -o $(CHECKOV_LOCK)
$(CHECKOV_ENV)/.installed: $(CHECKOV_LOCK) | $(UV)
	$(UV) venv --quiet --allow-existing --python $(PYTHON) $(CHECKOV_ENV)
	VIRTUAL_ENV=$(CHECKOV_ENV) $(UV) pip sync --quiet --require-hashes $(CHECKOV_LOCK)
	touch $@

checkov: $(CHECKOV_ENV)/.installed

migrate: install
	$(BIN)/llm-gateway migrate --config $(CONFIG)

run: migrate
	$(BIN)/llm-gateway serve --config $(CONFIG) --host $(HOST) --port $(PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# The admin UI's browser tests drive Debian's Chromium (never `playwright install`, which
# downloads a browser). Installing it needs root, as in CI and in the dev container.
chromium:
	@command -v chromium >/dev/null 2>&1 || { apt-get update && apt-get install -y --no-install-recommends chromium; }

# The official MCP conformance suite and npm's server-everything (with a Node 22 runtime from the
# npm registry's `node` package), from their lock file; the tests also install them on demand.
NPM_TOOLS := tests/mcp_client/npm
$(NPM_TOOLS)/node_modules/.package-lock.json: $(NPM_TOOLS)/package-lock.json
	npm ci --prefix $(NPM_TOOLS) --no-audit --no-fund --loglevel=error

npm-tools: $(NPM_TOOLS)/node_modules/.package-lock.json

# Tests run in parallel worker processes (most wait on sockets and subprocesses, not the CPU), one
# test file per worker so module fixtures are shared; the few timing-sensitive ones (marked
# `alone`) run afterwards by themselves.
PYTEST_WORKERS ?= auto
pytest: install checkov chromium npm-tools
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m "not alone"
	$(BIN)/pytest -q -m alone

test: lint typecheck pytest

clean:
	rm -rf $(VENV) $(TOOLS) var .mypy_cache .ruff_cache .pytest_cache .clients

# The client matrix (docs/clients.md): coding agents, agent frameworks and MCP clients, installed
# into .clients/ from npm and PyPI, each run unchanged against the gateway with the provider fakes
# upstream. Not part of `make test` (it downloads the clients); writes docs/clients.md.
clients: install
	$(BIN)/python -m clients.run

# The side-by-side benchmark (nginx and wrk from Debian packages, installed when missing, as
# root like chromium above; see docs/benchmarks.md), and valgrind for `python -m bench.instructions`.
bench-tools:
	@command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || { apt-get update && apt-get install -y --no-install-recommends nginx-light; }
	@command -v wrk >/dev/null 2>&1 || { apt-get update && apt-get install -y --no-install-recommends wrk; }
	@command -v valgrind >/dev/null 2>&1 || { apt-get update && apt-get install -y --no-install-recommends valgrind; }

# CPU per request may not grow: the instruction counts are checked against the ones recorded in
# docs/performance.md first (more than 5 % over either fails; about four minutes).
bench: install bench-tools
	$(BIN)/python -m bench.instructions --modes whole stream --check
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.catalog
	$(BIN)/python -m bench.guardrails
	$(MAKE) bench-usage

# The usage API over 10 million usage records on PostgreSQL (127.0.0.1:5432; writes
# docs/usage-benchmark.md). Needs no nginx or wrk.
bench-usage: install
	$(BIN)/python -m bench.usage

# Two replicas on PostgreSQL and Redis under mixed traffic with faults on a schedule; checks the
# invariants and writes them into docs/reliability.md (bench/soak.py). Not part of `make test`
# (it takes SOAK_MINUTES). It starts a PostgreSQL and a Redis of its own on free loopback ports and
# breaks only those (bench/soak_services.py); the machine's 5432 and 6379 are never touched.
SOAK_MINUTES ?= 10
soak: install
	$(BIN)/python -m bench.soak --minutes $(SOAK_MINUTES)
