"""Argument types for the flags that are not settings: each refuses a value that makes no sense
in one line (argparse prints it with the flag's name and exits 2), never a traceback later."""

from __future__ import annotations

import argparse
import math


def positive(text: str) -> float:
    """A finite number above zero (a time scale, a duration)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number above 0")
    return value


def count(text: str) -> int:
    """A whole number of at least 1 (requests in flight)."""
    value = whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is below 1")
    return value


def whole(text: str) -> int:
    """A whole number of at least 0 (a draft length, a seed)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is below 0")
    return value


def port(text: str) -> int:
    """A TCP port, 0 (any free) to 65535: the kernel would take 99999 modulo 65536."""
    value = whole(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port (0-65535)")
    return value
