"""Rules as typed records, and PromQL written once with named holes.

A recording rule is a `Recording`; an expression whose layout matters is a `PromQL` template,
written as the multi-line PromQL it produces, its holes `${name}`. Filling one refuses a hole
left open and a name it has no hole for (a typo), as sloth's templates do (Go's text/template
with `missingkey=error`): a rule that renames a series cannot silently keep the old one. A value
is text or a number (mypy holds it: `None` would be written as a label or series name).
`$1` in `label_replace` is no hole (a hole is braced).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_HOLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class TemplateError(KeyError):
    """A template filled with a hole left open, or a name it has no hole for."""


class PromQL:
    """One PromQL expression with named holes; `template(name=value, ...)` fills them. With
    `indent`, a hole that begins its line (after spaces) indents every line of its value as
    far: an expression nested whole inside another keeps its layout."""

    __slots__ = ("holes", "indent", "text")

    def __init__(self, text: str, indent: bool = False) -> None:
        self.text = textwrap.dedent(text).strip("\n")
        self.holes = frozenset(_HOLE.findall(self.text))
        self.indent = indent

    def __call__(self, **values: str | float) -> str:
        missing, unknown = self.holes - values.keys(), values.keys() - self.holes
        if missing or unknown:
            raise TemplateError(
                f"PromQL template: holes left open {sorted(missing)}, "
                f"names without a hole {sorted(unknown)}:\n{self.text}"
            )
        if not self.indent:
            return _HOLE.sub(lambda hole: str(values[hole[1]]), self.text)
        lines = []
        for line in self.text.split("\n"):
            margin = line[: len(line) - len(line.lstrip(" "))]
            filled = _HOLE.sub(lambda hole: str(values[hole[1]]), line)
            lines.append(
                filled.replace("\n", "\n" + margin) if _HOLE.match(line, len(margin)) else filled
            )
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Recording:
    """One recording rule: the series it records, its expression, and labels it adds."""

    record: str
    expr: str
    labels: Mapping[str, str] | None = None

    def document(self) -> dict[str, Any]:
        """The rule as Prometheus' rule files write it."""
        out: dict[str, Any] = {"record": self.record, "expr": self.expr}
        if self.labels:
            out["labels"] = dict(self.labels)
        return out


def group(name: str, rules: list[Recording], interval: str | None = None) -> dict[str, Any]:
    """A rule group as Prometheus' rule files write it (`interval`: its own evaluation's)."""
    out: dict[str, Any] = {"name": name, "rules": [rule.document() for rule in rules]}
    if interval is not None:
        out["interval"] = interval
    return out
