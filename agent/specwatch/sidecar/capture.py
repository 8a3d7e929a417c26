"""Request text for the cycle log, only when the operator asks (`cycle_log.capture_text`):
redacted by the operator's hook, then capped. Off, nothing here runs and no text is kept."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import msgspec

from specwatch.core.records import RequestRecord
from specwatch.engines.vllm.response import ParseFailure, choice_text, decode_json, first_choice
from specwatch.proxy.observation import Observation
from specwatch.settings.service import CycleLogSettings


class CaptureError(ValueError):
    pass


def load_hook(path: str) -> Callable[[str], str]:
    """`module:function`, imported; CaptureError (one line) when it is not a callable."""
    module_name, _, name = path.partition(":")
    try:
        hook = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as error:
        raise CaptureError(f"cycle_log.redact: cannot load {path!r}: {error}") from None
    if not callable(hook):
        raise CaptureError(f"cycle_log.redact: {path!r} is not callable")
    return hook  # type: ignore[no-any-return]


class TextCapture:
    def __init__(self, settings: CycleLogSettings) -> None:
        self._chars = settings.capture_text_chars
        self._redact = None if settings.redact is None else load_hook(settings.redact)

    def _text(self, text: str | None) -> str | None:
        if text is None:
            return None
        if self._redact is not None:
            text = str(self._redact(text))  # before the cut: a pattern is never cut in half
        return text[: self._chars]

    def __call__(self, record: RequestRecord, observation: Observation) -> RequestRecord:
        completion = None
        if not observation.stream and observation.payload is not None:
            # a stream's text passes through the proxy without being kept: not captured
            try:
                choice = first_choice(decode_json(observation.payload))
            except ParseFailure:
                choice = None
            completion = None if choice is None else choice_text(choice)
        return msgspec.structs.replace(
            record,
            prompt_text=self._text(observation.features.prompt_sample or None),
            completion_text=self._text(completion),
        )
