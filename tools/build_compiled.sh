#!/usr/bin/env bash
# Builds specwatch with its analysis compiled (mypyc; setup.py) into a wheel in DIST and
# installs the package, without its dependencies, into TARGET: `PYTHONPATH=TARGET` then runs
# the compiled build with the dependencies of the Python that runs it (the project venv).
#   tools/build_compiled.sh TARGET [DIST]     (PYTHON: the venv's python, default .venv/bin/python)
set -euo pipefail
target=${1:?usage: tools/build_compiled.sh TARGET [DIST]}
dist=${2:-$(mktemp -d)}
python=${PYTHON:-.venv/bin/python}
root=$(cd "$(dirname "$0")/.." && pwd)
# a copy of the tree: the build writes build/ and *.egg-info, which must not land in a checkout
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp -r "$root"/{pyproject.toml,setup.py,README.md,agent} "$src/"
find "$src" -name __pycache__ -prune -exec rm -rf {} +
# what the build imports, without isolation: setuptools as pyproject.toml's build-system asks,
# and the mypy the project type-checks with (mypyc is part of it)
"$python" -m pip install --quiet 'setuptools>=77' wheel "$(grep -o '"mypy==[^"]*"' "$root/pyproject.toml" | tr -d '"')"
SPECWATCH_COMPILE=1 "$python" -m pip wheel --quiet --no-build-isolation --no-deps \
    --wheel-dir "$dist" "$src"
"$python" -m pip install --quiet --no-deps --target "$target" "$dist"/specwatch-*.whl
