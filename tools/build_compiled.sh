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
say() { echo "build_compiled: $*" >&2; }
say "build tools (setuptools, wheel, the project's mypy) into $python's environment"
"$python" -m pip install --quiet 'setuptools>=77' wheel "$(grep -o '"mypy==[^"]*"' "$root/pyproject.toml" | tr -d '"')"
say "compiling the analysis with mypyc (a few minutes on 2 cores)"
start=$SECONDS
SPECWATCH_COMPILE=1 "$python" -m pip wheel --quiet --no-build-isolation --no-deps \
    --wheel-dir "$dist" "$src"
wheel=$(ls "$dist"/specwatch-*.whl)
say "built $wheel in $((SECONDS - start)) s"
"$python" -m pip install --quiet --no-deps --target "$target" "$wheel"
say "installed into $target: run it with PYTHONPATH=$target $python -m specwatch"
