"""A redaction hook as an operator would write one (`cycle_log.redact`): digits masked."""

from __future__ import annotations

import re


def mask_digits(text: str) -> str:
    return re.sub(r"\d", "#", text)
