"""What each of gen/'s surviving mutants changes in the files the generator writes.

    python tools/mutate_gen.py MUTANT ...     # run by tools/mutate.py in a part's mutants/

Run where mutmut staged the part (the mutated package under src/), it renders every file once
as the original and once per mutant (mutmut's trampolines pick the mutant named in
MUTANT_UNDER_TEST), and prints one JSON object, mutant -> what changed:

Each is rendered on the four settings the tests render with (the defaults, a time scale of
60, a runbook address, other zone bars).

- "same": every file byte for byte the original's on each. No test of the generator's output
  can tell such a mutant apart: an equivalent mutant (a default never used, an order that is
  sorted later, ...).
- "words": only words a person reads, or the files' layout, changed: an alert's summary,
  description and runbook steps, the runbooks page, a dashboard's titles, descriptions and
  legends, YAML comments, or the same documents written another way (what Prometheus,
  Grafana, Alertmanager and Kubernetes parse is the original's). Those are held by the
  committed copies (`specwatch generate --check`, and review of their diff), not by a rule's
  test: counted apart.
- "output": anything else (a rule, a label, a threshold, a query, a route, a unit): a survivor.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from typing import Any

import yaml

# an alert's annotations that are prose; `value` and `cause` carry queries and links
ALERT_WORDS = frozenset({"summary", "description", "runbook"})
# a dashboard's words: what a panel, a row or the dashboard is called and says it shows, and
# a series' legend (the labels it names are held by test_dashboards)
DASHBOARD_WORDS = frozenset({"title", "description", "legendFormat"})


def _rules(node: Any) -> Any:
    """A YAML document without its prose (alert annotations), embedded documents read too."""
    if isinstance(node, dict):
        kept = {}
        for key, value in node.items():
            if key == "annotations" and isinstance(value, dict):
                value = {k: v for k, v in value.items() if k not in ALERT_WORDS}
            elif isinstance(value, str) and isinstance(key, str):
                value = _embedded(key, value)
            kept[key] = _rules(value)
        return kept
    if isinstance(node, list):
        return [_rules(item) for item in node]
    return node


def _embedded(key: str, value: str) -> Any:
    """A ConfigMap's or Secret's file read as its kind: a dashboard, a YAML config."""
    if key.endswith(".json"):
        return _dashboard(json.loads(value))
    if key.endswith((".yaml", ".yml")):
        return _rules(yaml.safe_load(value))
    return value


def _dashboard(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _dashboard(v) for k, v in node.items() if k not in DASHBOARD_WORDS}
    if isinstance(node, list):
        return [_dashboard(item) for item in node]
    return node


def without_words(files: dict[str, bytes]) -> dict[str, Any]:
    """Every file as what it does: parsed (comments gone), its prose left out."""
    read: dict[str, Any] = {}
    for name, data in files.items():
        if name.endswith(".md"):
            continue  # the runbooks: words throughout
        if name.endswith(".json"):
            read[name] = _dashboard(json.loads(data))
        elif name.endswith((".yml", ".yaml")):
            read[name] = [_rules(document) for document in yaml.safe_load_all(data)]
        else:
            read[name] = data
    return read


# what the forked workers read: the renderer, the settings, the original files (set by classify)
_RENDER: dict[str, Any] = {}


def _kind(mutant: str) -> str:
    """Variant by variant, stopping at the first whose documents differ."""
    render, variants = _RENDER["render"], _RENDER["variants"]
    os.environ["MUTANT_UNDER_TEST"] = mutant
    same = True
    for (settings, scale), files, read in zip(
        variants, _RENDER["original"], _RENDER["plain"], strict=True
    ):
        try:
            now = render(settings, scale)
        except Exception:  # a mutant that breaks the generator: an output of its own
            return "output"
        if now != files:
            same = False
            if without_words(now) != read:
                return "output"
    return "same" if same else "words"


def classify(mutants: list[str]) -> dict[str, str]:
    sys.path.insert(0, "src")
    from specwatch.gen.writer import render
    from specwatch.settings import load_settings

    # the settings the tests render with: a mutant on another setting's path shows there
    variants = [
        (load_settings(), 1.0),
        (load_settings(), 60.0),
        (load_settings(alerts={"runbook_base_url": "https://wiki.example.org/r"}), 1.0),
        (load_settings(zones={"green": 0.8, "red": 0.4}), 1.0),
    ]
    os.environ["MUTANT_UNDER_TEST"] = ""
    original = [render(settings, scale) for settings, scale in variants]
    _RENDER.update(
        render=render,
        variants=variants,
        original=original,
        plain=[without_words(files) for files in original],
    )
    # two processes, forked with the originals rendered: a render takes a second here
    with multiprocessing.get_context("fork").Pool(2) as pool:
        return dict(zip(mutants, pool.map(_kind, mutants, chunksize=4), strict=True))


if __name__ == "__main__":
    print(json.dumps(classify(sys.argv[1:])))
