# Everything a newcomer needs: `make demo` and `make test` set up the virtualenv themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/specwatch demo

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict agent/

bench: setup
	$(BIN)/python benchmarks/analysis_throughput.py
	$(BIN)/python benchmarks/proxy_overhead.py
	$(BIN)/python benchmarks/proxy_overhead.py --step-ms 15 --requests 1000

clean:
	rm -rf $(VENV) build *.egg-info agent/*.egg-info
