"""specwatch: a monitoring sidecar and SLO alerting agent for speculative decoding on vLLM."""

from importlib.machinery import EXTENSION_SUFFIXES
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec

try:
    __version__ = version("specwatch")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"


def analysis_build() -> str:
    """`compiled` when the analysis runs as mypyc's extension modules (a `SPECWATCH_COMPILE=1`
    build: setup.py), else `python`. Looked up, not imported: --version stays cheap."""
    spec = find_spec("specwatch.analysis.counting.counts")
    origin = "" if spec is None or spec.origin is None else spec.origin
    return "compiled" if origin.endswith(tuple(EXTENSION_SUFFIXES)) else "python"
