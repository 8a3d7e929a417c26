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


def room_of(path: Path, base: Path = PACKAGE) -> str:
    rel = path.relative_to(base)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [f"{node.module}.{alias.name}" for alias in node.names]  # a module or a name in it
    return []


@functools.cache
def arrows(inside: str = "") -> dict[str, frozenset[str]]:
    """Each room and the rooms it imports (itself left out): the package's rooms, or with
    `inside` ("analysis") the rooms inside that one (its folders and modules)."""
    base = PACKAGE.joinpath(*inside.split(".")) if inside else PACKAGE
    dotted = ".".join(("specwatch", inside)) if inside else "specwatch"
    files = sorted(base.rglob("*.py"))
    rooms = {room_of(path, base) for path in files}
    found: dict[str, set[str]] = {room: set() for room in rooms}
    for path in files:
        me = room_of(path, base)
        for node in ast.walk(ast.parse(path.read_text())):
            for name in _imported(node):
                if not name.startswith(dotted + "."):
                    continue
                room = name.removeprefix(dotted + ".").split(".")[0]
                if room in rooms and room != me:
                    found[me].add(room)
    return {room: frozenset(inner) for room, inner in found.items()}


def floors(inside: str = "") -> dict[str, int]:
    graph = arrows(inside)
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


def declared_inside(room: str) -> list[tuple[str, int | None, str]]:
    """The rooms inside `room` as its part of the layout block lists them (indented one step
    more), in its order: (inner room, the floor its line says, the line)."""
    inner = re.compile(r"^    (?P<name>[A-Za-z_]+)(?:/|\.py) ")
    out, mine = [], False
    for line in layout_block().splitlines():
        header = _HEADER.match(line)
        if header:
            mine = header["name"] == room
        elif mine and (found := inner.match(line)):
            said = _FLOOR.search(line)
            out.append((found["name"], int(said[1]) if said else None, line))
    return out
