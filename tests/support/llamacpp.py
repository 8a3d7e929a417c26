"""A real llama.cpp server (tools/build_llamacpp.sh) for the e2e tests: the tiny models converted
to GGUF with llama.cpp's own converter (tools/convert_tiny_gguf.py), `specwatch serve` in front.

The build is `.llamacpp` beside the checkout's `.venv` (or LLAMACPP_DIR); `make llamacpp` and
`.ci/run` build it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support import ROOT

LLAMACPP_DIR = Path(os.environ.get("LLAMACPP_DIR", ROOT / ".llamacpp"))
LLAMA_SERVER = LLAMACPP_DIR / "bin" / "llama-server"


def to_gguf(python: Path, model: Path, out: Path) -> Path:
    """`model` (a Hugging Face folder) as one f32 GGUF file, converted by llama.cpp's script."""
    subprocess.run(
        [str(python), str(ROOT / "tools" / "convert_tiny_gguf.py"), str(LLAMACPP_DIR / "src"),
         str(model), str(out)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return out


def llama_server_command(model: Path, *speculation: str) -> list[str]:
    """llama.cpp's server on the tiny model, served as "tiny", two slots, one thread each (the
    machine has two cores and the suite runs beside it)."""
    return [
        str(LLAMA_SERVER), "-m", str(model), "--alias", "tiny", "-np", "2", "-c", "2048",
        "-t", "1", "--temp", "0", *speculation,
    ]  # fmt: skip
