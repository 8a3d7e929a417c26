"""Convert the tiny models (tools/build_tiny_models.py) to GGUF for llama.cpp's server, with
llama.cpp's own converter.

Run with a Python that has torch and transformers (.venv-vllm), from a llama.cpp source tree:

    .venv-vllm/bin/python tools/convert_tiny_gguf.py LLAMA_CPP_DIR MODEL_DIR OUT.gguf

The converter names a BPE tokenizer's pre-tokenizer by hashing how it splits a test text and
refuses one it has not seen. The tiny models' tokenizer is trained here, so no hash of it is
known; it is a byte-level BPE split by GPT-2's regex (pre_tokenizers.ByteLevel with its
default use_regex), which is what llama.cpp's "gpt-2" pre-tokenizer does. So that answer is
given, and nothing else about the conversion changes.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    source, model, out = (Path(arg) for arg in sys.argv[1:])
    sys.path[:0] = [str(source), str(source / "gguf-py")]
    from conversion.base import TextModel  # llama.cpp's, from the path above

    TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"  # type: ignore[method-assign]
    converter = source / "convert_hf_to_gguf.py"
    sys.argv = [str(converter), str(model), "--outfile", str(out), "--outtype", "f32"]
    runpy.run_path(str(converter), run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
