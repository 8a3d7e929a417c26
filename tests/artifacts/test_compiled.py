"""The compiled dialect declared once: the modules mypyc compiles are setup.py's `COMPILED`,
the modules whose docstring begins `[compiled]`, and the list in docs/architecture.md's
"Writing for the compiled build", one set."""

from __future__ import annotations

import ast

from tests.support import ROOT

PACKAGE = ROOT / "agent" / "specwatch"
SECTION = "## Writing for the compiled build\n"


def from_setup() -> set[str]:
    for node in ast.parse((ROOT / "setup.py").read_text()).body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "COMPILED":
            listed = ast.literal_eval(node.value)
            assert len(listed) == len(set(listed)), "a module listed twice"
            return set(listed)
    raise AssertionError("setup.py has no COMPILED list")


def from_docstrings() -> set[str]:
    return {
        str(path.relative_to(ROOT))
        for path in PACKAGE.rglob("*.py")
        if (ast.get_docstring(ast.parse(path.read_text()), clean=False) or "").startswith(
            "[compiled] "
        )
    }


def from_architecture() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split(SECTION, 1)[1].split("```\n", 2)[1]
    out: set[str] = set()
    for line in block.splitlines():
        folder, rest = line.split(maxsplit=1)
        if rest.startswith("every module"):
            out |= {
                str(path.relative_to(ROOT))
                for path in (PACKAGE / folder).rglob("*.py")
                if path.name != "__init__.py"
            }
        else:
            out |= {f"agent/specwatch/{folder}{name}" for name in rest.split()}
    return out


def test_setup_the_docstrings_and_the_architecture_name_the_same_modules() -> None:
    compiled = from_setup()
    assert len(compiled) > 40
    assert all((ROOT / module).is_file() for module in compiled)
    assert from_docstrings() == compiled
    assert from_architecture() == compiled


def test_no_package_face_is_compiled() -> None:
    """mypyc compiles modules; a package's __init__ stays Python (it only names its room)."""
    assert not any(module.endswith("__init__.py") for module in from_setup())
