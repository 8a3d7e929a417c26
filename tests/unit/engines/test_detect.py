"""Which engine a command starts or a server is (engines/detect.py), and what `serve` adds to
each engine's command (vllm/child.py): vLLM's flags only to vLLM, which others refuse."""

from __future__ import annotations

import pytest
from specwatch.engines.detect import LLAMACPP, SGLANG, TRTLLM, VLLM, engine_of, owner_engine
from specwatch.vllm.child import prepare_command


@pytest.mark.parametrize(
    ("argv", "engine"),
    [
        (["vllm", "serve", "m"], VLLM),
        (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], VLLM),
        (["/opt/llama/bin/llama-server", "-m", "m.gguf"], LLAMACPP),
        (["python3", "-m", "sglang.launch_server", "--model-path", "m"], SGLANG),
        (["sglang", "serve", "--model-path", "m"], SGLANG),
        (["trtllm-serve", "m", "--extra_llm_api_options", "x.yaml"], TRTLLM),
        ([], VLLM),
    ],
)
def test_the_engine_of_a_command(argv: list[str], engine: str) -> None:
    assert engine_of(argv) == engine


@pytest.mark.parametrize("argv", [["sglang", "serve", "--model-path", "m"], ["trtllm-serve", "m"]])
def test_serve_gives_other_engines_a_place_to_listen_and_nothing_of_vllms(argv: list[str]) -> None:
    command = prepare_command([*argv, "--speculative-algorithm", "EAGLE"], port=8123)
    assert command.added == ("--host", "127.0.0.1", "--port", "8123")


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
