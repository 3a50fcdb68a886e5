# recall: common tasks. `make help` lists them.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: help venv install dev fmt lint test test-rust mutants bench ci

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

venv: $(BIN)/python ## Create the development virtual environment
$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip maturin

install: venv ## Install recall with the test extras (release build)
	$(BIN)/pip install '.[test]'

dev: venv ## Build the extension in place (maturin develop) with dev tools
	$(BIN)/pip install --quiet -e '.[dev]'
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --release

fmt: ## Format Rust and Python
	cargo fmt --all
	$(BIN)/ruff format python tests benches training crates/judgment/mutants.py
	$(BIN)/ruff check --fix python tests benches training crates/judgment/mutants.py

lint: ## ruff, mypy, stubtest, cargo fmt --check, clippy -D warnings
	$(BIN)/ruff check python tests benches training crates/judgment/mutants.py
	$(BIN)/ruff format --check python tests benches training crates/judgment/mutants.py
	$(BIN)/mypy
	$(BIN)/python -m mypy.stubtest recall._core
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

test: test-rust ## Rust unit tests and the pytest suite
	$(BIN)/python -m pytest

test-rust: ## Rust unit tests (the judgment crate's and the core's)
	cargo test --workspace --quiet

mutants: ## Mutation run of the judgment crate against its own tests (needs cargo-mutants)
	$(BIN)/python crates/judgment/mutants.py

bench: ## Benchmarks (figures go to benches/RESULTS.md; several minutes)
	$(BIN)/python benches/index_throughput.py
	$(BIN)/python benches/search_latency.py
	$(BIN)/python benches/cold_start.py
	$(BIN)/python benches/mcp_latency.py
	$(BIN)/python benches/update_cost.py
	$(BIN)/python benches/hashing_dim.py
	$(BIN)/python benches/lint_speed.py

ci: ## What CI runs, on this checkout
	bash .ci/run
