# fawn — the two commands: `make run` (set up and serve) and `make test` (set up and test).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_WORKERS ?= 4

.PHONY: run test check fmt lint typecheck imports bench setup system-deps clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

system-deps:
	@scripts/system-deps

run: setup
	@scripts/system-deps --run-only || true
	$(BIN)/fawn serve $(ARGS)

test: setup system-deps
	$(BIN)/pytest -n $(PYTEST_WORKERS) -p no:cacheprovider

fmt: setup
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

lint: setup
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench

typecheck: setup
	$(BIN)/mypy

imports: setup
	$(BIN)/lint-imports

check: lint typecheck imports test

bench: setup
	$(BIN)/python bench/runs_bench.py $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
