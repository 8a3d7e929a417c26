"""tools/build_llamacpp.sh shares its per-machine cache safely: checkouts that ask for the build
at once all end linked to the one build, and one that finds a half-made cache (a build that
died) does not take it. The whole build, two at once, was run by hand (CHANGELOG: both
succeeded, one building and the other waiting on the lock); here the cache is made beforehand,
so only the lock and the check run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support import ROOT

SCRIPT = ROOT / "tools" / "build_llamacpp.sh"


def built(cache: Path) -> None:
    """A cache as a finished build leaves it: a server that answers --version, .installed."""
    (cache / "bin").mkdir(parents=True)
    server = cache / "bin" / "llama-server"
    server.write_text("#!/bin/sh\necho 'version: 0.6.0-dev (build 11434)'\n")
    server.chmod(0o755)
    (cache / ".installed").touch()


def test_checkouts_asking_at_once_all_link_the_one_build(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built(cache)
    env = {**os.environ, "LLAMACPP_CACHE": str(cache)}
    outs = [tmp_path / f"checkout{i}" / ".llamacpp" for i in range(4)]
    for out in outs:
        out.parent.mkdir()
    runs = [
        subprocess.Popen([str(SCRIPT), str(out)], env=env, stderr=subprocess.PIPE, text=True)
        for out in outs
    ]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        assert f"the build in {cache}" in err
    assert [out.resolve() for out in outs] == [cache.resolve()] * 4
    assert (tmp_path / "cache.lock").exists()  # the lock beside the cache, not in a checkout


def test_a_half_made_cache_is_not_taken_and_a_failed_build_leaves_nothing(tmp_path: Path) -> None:
    """A cache without .installed (a build that died before the end) is built anew; here the
    download fails (a `curl` that refuses), and the failed build leaves no directory of its own
    behind and links nothing."""
    cache = tmp_path / "cache"
    built(cache)
    (cache / ".installed").unlink()
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("cmake", "g++"):
        (tools / name).symlink_to("/bin/true")
    (tools / "curl").write_text("#!/bin/sh\nexit 22\n")
    (tools / "curl").chmod(0o755)
    out = tmp_path / ".llamacpp"
    env = {**os.environ, "LLAMACPP_CACHE": str(cache), "PATH": f"{tools}:{os.environ['PATH']}"}
    run = subprocess.run([str(SCRIPT), str(out)], env=env, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert run.returncode != 0
    assert not out.exists()
    assert not list(tmp_path.glob("cache.building.*"))
    assert not (cache / ".installed").exists()
