#!/usr/bin/env bash
# The committed quality examples (docs/examples/quality-ngram, quality-draft): baseline against
# K = 3 on the tiny model: greedy identity at temperature 0, the distribution test at 0.5, cost.
#   make setup vllm && docs/examples/quality.sh [REQUESTS]
source "$(dirname "$0")/common.sh"
bench=(.venv/bin/specwatch bench --sweep-k 3 --requests "${1:-120}" --max-tokens 64
       --concurrency 4 --max-prompt-words 150 --ctx-buckets 64,128,256 --temperature 0
       --quality-temperature 0.5 --quality-prompts 12 --quality-samples 6 --price-per-hour 2.0)
"${bench[@]}" --out docs/examples/quality-ngram -- "${vllm[@]}" --speculative-config "$ngram"
"${bench[@]}" --out docs/examples/quality-draft -- "${vllm[@]}" --speculative-config "$draft"
