"""The house's floors from the code's own imports (as farm-studio draws them): a room is a
top-level package or module of agent/specwatch, an arrow A -> B an import of B anywhere in A
(functions' late imports too), and a room's floor is one above the highest room it imports."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from tests.support import ROOT

PACKAGE = ROOT / "agent" / "specwatch"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def room_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        if node.module == "specwatch":
            return [f"specwatch.{alias.name}" for alias in node.names]
        return [node.module]
    return []


@functools.cache
def arrows() -> dict[str, frozenset[str]]:
    """Each room and the rooms it imports (itself left out)."""
    files = sorted(PACKAGE.rglob("*.py"))
    rooms = {room_of(path) for path in files}
    found: dict[str, set[str]] = {room: set() for room in rooms}
    for path in files:
        me = room_of(path)
        for node in ast.walk(ast.parse(path.read_text())):
            for name in _imported(node):
                parts = [*name.split("."), ""]
                if parts[0] == "specwatch" and parts[1] in rooms and parts[1] != me:
                    found[me].add(parts[1])
    return {room: frozenset(inner) for room, inner in found.items()}


def floors() -> dict[str, int]:
    graph = arrows()
    out: dict[str, int] = {}

    def floor(room: str, path: tuple[str, ...]) -> int:
        if room in path:
            raise AssertionError(f"an import circle: {' -> '.join((*path, room))}")
        if room not in out:
            out[room] = 1 + max((floor(b, (*path, room)) for b in graph[room]), default=0)
        return out[room]

    for room in graph:
        floor(room, ())
    return out


_HEADER = re.compile(r"^  (?P<name>[A-Za-z_]+)(?:/|\.py) ")
_FLOOR = re.compile(r"floor (\d+)")


def layout_block() -> str:
    """docs/architecture.md's layout block: the lines under `agent/specwatch/`."""
    return ARCHITECTURE.read_text().split("```\nagent/specwatch/\n", 1)[1].split("```", 1)[0]


def declared() -> list[tuple[str, int | None, str]]:
    """The layout block's rooms in its order: (room, the floor its line says, the line)."""
    out = []
    for line in layout_block().splitlines():
        header = _HEADER.match(line)
        if header:
            said = _FLOOR.search(line)
            out.append((header["name"], int(said[1]) if said else None, line))
    return out
