"""specwatch: a monitoring sidecar and SLO alerting agent for speculative decoding on vLLM."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("specwatch")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"
