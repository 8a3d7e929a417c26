"""Which engine a command starts or a server is (engines/detect.py), and what `serve` adds to
each engine's command (upstream/child.py): vLLM's flags only to vLLM, which others refuse."""

from __future__ import annotations

import asyncio
import shlex

import pytest
from specwatch.engines.detect import LLAMACPP, SGLANG, TRTLLM, VLLM, engine_of, owner_engine
from specwatch.settings import Settings
from specwatch.upstream.child import prepare_command

REQUIRED_FLAGS_ADDED = (
    "--per-request-spec-decode-metrics",
    "detailed",
    "--enable-per-request-metrics",
)
_SGLANG_ADDED = ("--enable-metrics", "--host", "127.0.0.1", "--port", "8123")


@pytest.mark.parametrize(
    ("argv", "engine"),
    [
        (["vllm", "serve", "m"], VLLM),
        (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], VLLM),
        (["/opt/llama/bin/llama-server", "-m", "m.gguf"], LLAMACPP),
        (["python3", "-m", "sglang.launch_server", "--model-path", "m"], SGLANG),
        (["sglang", "serve", "--model-path", "m"], SGLANG),
        (["trtllm-serve", "m", "--extra_llm_api_options", "x.yaml"], TRTLLM),
        (["vllm", "serve", "/models/sglang"], VLLM),  # the first program decides, not a path
        ([], VLLM),
    ],
)
def test_the_engine_of_a_command(argv: list[str], engine: str) -> None:
    assert engine_of(argv) == engine


_HOST_PORT = ("--host", "127.0.0.1", "--port", "8123")


# the launch forms each engine documents, as users paste them: the engine read through its
# launcher, and only what that engine takes added (vLLM's flags make SGLang and trtllm-serve
# refuse to start)
@pytest.mark.parametrize(
    ("line", "engine", "added"),
    [
        ("vllm serve m --speculative-config {}", VLLM, REQUIRED_FLAGS_ADDED + _HOST_PORT),
        ("python -u -m sglang.launch_server --model-path m", SGLANG, _SGLANG_ADDED),
        ("uv run python -m sglang.launch_server --model-path m", SGLANG, _SGLANG_ADDED),
        (
            "env OMP_NUM_THREADS=1 python3.11 -m sglang.launch_server --model-path m",
            SGLANG,
            _SGLANG_ADDED,
        ),
        ("sglang serve --model-path m --enable-metrics", SGLANG, _HOST_PORT),
        ("trtllm-llmapi-launch trtllm-serve m --backend pytorch", TRTLLM, _HOST_PORT),
        ("mpirun -n 2 --allow-run-as-root trtllm-serve m", TRTLLM, _HOST_PORT),
        ("python -m tensorrt_llm.commands.serve m", TRTLLM, _HOST_PORT),
        (
            "/opt/llama/bin/llama-server -m m.gguf --spec-type ngram-simple",
            LLAMACPP,
            ("--metrics", *_HOST_PORT),
        ),
    ],
)
def test_serve_reads_each_launch_form_and_adds_only_what_its_engine_takes(
    line: str, engine: str, added: tuple[str, ...]
) -> None:
    argv = shlex.split(line)
    assert engine_of(argv) == engine
    command = prepare_command(argv, port=8123)
    assert (command.engine, command.added) == (engine, added)
    assert command.argv == (*argv, *added)


def test_serve_says_which_engines_command_it_added_to(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line printed before the child starts names the engine (it said "vLLM" for all)."""
    import specwatch.commands.serve as serve

    class Stop(Exception):
        pass

    def refuse(*_: object, **__: object) -> None:
        raise Stop

    monkeypatch.setattr(serve, "Sidecar", refuse)
    line = shlex.split("uv run python -m sglang.launch_server --model-path m --port 9")
    with pytest.raises(Stop):
        asyncio.run(serve.serve(Settings(), line))
    assert (
        "added to the SGLang command: --enable-metrics --host 127.0.0.1" in capsys.readouterr().err
    )


def test_the_engine_a_server_names_in_its_models() -> None:
    def models(owner: object) -> dict[str, object]:
        return {"object": "list", "data": [{"id": "m", "owned_by": owner}]}

    assert owner_engine(models("sglang")) == SGLANG
    assert owner_engine(models("tensorrt_llm")) == TRTLLM
    assert owner_engine(models("vllm")) == VLLM
    assert owner_engine(models("llamacpp")) == LLAMACPP
    unknown: list[object] = [models("openai"), models(None), {"data": []}, [], None]
    for answer in unknown:
        assert owner_engine(answer) is None
