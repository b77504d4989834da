PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo quickstart bench lint typecheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check agentgraph tests benchmarks examples
	$(BIN)/ruff format --check agentgraph tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy --strict agentgraph
	$(BIN)/mypy --strict tests/typing_check.py

test: lint typecheck
	$(BIN)/python -m pytest -q

demo: $(STAMP)
	$(BIN)/python examples/react_agent.py

quickstart: $(STAMP)
	$(BIN)/python examples/quickstart.py

$(VENV)/.bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(VENV)/.bench

bench: $(VENV)/.bench
	$(BIN)/python benchmarks/engine_overhead.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
