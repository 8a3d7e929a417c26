"""SGLang's answers, written by SGLang's own classes: tests/fixtures/sglang-0.5.23/.

SGLang runs on no machine of this project (it needs a GPU build of torch and its kernels), but
its OpenAI protocol classes and its stream chunk builder are plain pydantic and msgspec: this
script imports them from SGLang's wheel and writes with them, in the order its servers write,
the answers specwatch reads. What a server would compute upstream of its serializers (a
request's `meta_info`) is computed as SGLang's tokenizer manager does, each formula named
beside the line it follows. Run it with `make sglang-fixtures` (which fetches the wheel); the
files it writes are committed, and tests/unit/engines/test_sglang_fixtures.py holds them to
what they must say.

SGLang's files followed (0.5.23, sglang-0.5.23-cp311 wheel from PyPI):
- srt/entrypoints/openai/protocol.py: ChatCompletionResponse, ChatCompletionStreamResponse,
  CompletionResponse, CompletionStreamResponse, SglExt, SpecTokensDetails, UsageInfo
- srt/entrypoints/openai/sse_utils.py: build_sse_content (every chat content chunk)
- srt/entrypoints/openai/serving_chat.py: _generate_chat_stream (2441-2805: content chunks,
  one finishing chunk per choice, the sglext chunk, the usage chunk only when included, [DONE])
- srt/entrypoints/openai/serving_completions.py: its stream (240-490) and _build_completion_
  response (540-650: several prompts' details keep only the first's when n = 1)
- srt/entrypoints/openai/utils.py: spec_tokens_details_from_meta_info, should_include_usage
- srt/entrypoints/openai/usage_processor.py: UsageProcessor
- srt/entrypoints/http_server.py: /generate (933-985: orjson, `data: ` + each out + [DONE])
- srt/managers/tokenizer_manager.py: meta_info (2506-2560), the spec fields on the finished
  output only (2755, _calculate_spec_decoding_metrics 3138-3200: proposed = verify count x
  (num_draft_tokens - 1); nothing when no step was verified)

    PYTHONPATH=<unpacked wheel> .venv-vllm/bin/python tools/sglang_fixtures.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSION = "0.5.23"
CREATED = 1796450000
MODEL = "qwen3-8b"


def _import_sglang() -> types.SimpleNamespace:
    """SGLang's protocol modules, without its package __init__ (which imports the runtime:
    torch kernels, the scheduler): `sglang` and `sglang.srt` made bare packages over the
    wheel's directories, so each module imported is SGLang's own file."""
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("sglang_fixtures: SGLang's wheel is not on PYTHONPATH")
    root = Path(next(iter(spec.submodule_search_locations)))
    for name, path in (("sglang", root), ("sglang.srt", root / "srt")):
        package = types.ModuleType(name)
        package.__path__ = [str(path)]
        sys.modules[name] = package
    from sglang.srt.entrypoints.openai import protocol, sse_utils, usage_processor, utils
    from sglang.srt.utils import json_response

    found = importlib.metadata.version("sglang")
    if found != VERSION:
        raise SystemExit(f"sglang_fixtures: the wheel is SGLang {found}, not {VERSION}")
    return types.SimpleNamespace(
        p=protocol, sse=sse_utils, usage=usage_processor.UsageProcessor, utils=utils,
        dumps=json_response.dumps_json,
    )  # fmt: skip


@dataclass
class Run:
    """One sequence as SGLang's scheduler runs it: the prefill's token, then one verify step
    per entry of `correct` (correct drafts, each step committing them and the bonus token).
    `width` is --speculative-num-draft-tokens - 1."""

    rid: str
    prompt_tokens: int
    pieces: list[str]  # the text each output (prefill, then each step) adds
    correct: list[int]
    width: int = 3
    finish: dict[str, Any] = field(default_factory=lambda: {"type": "length", "length": 0})

    @property
    def completion_tokens(self) -> int:
        return 1 + sum(c + 1 for c in self.correct)

    def meta_info(self, finished: bool) -> dict[str, Any]:
        """tokenizer_manager._handle_batch_output's meta_info (2506-2560, 2755)."""
        steps = self.correct if finished else []
        meta: dict[str, Any] = {
            "id": self.rid,
            "finish_reason": ({**self.finish, "length": self.completion_tokens}
                              if self.finish["type"] == "length" else self.finish)
            if finished else None,
            "prompt_tokens": self.prompt_tokens,
            "weight_version": "default",
            "num_retractions": 0,
            "reasoning_tokens": 0,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": 0,
        }  # fmt: skip
        if finished:
            meta["e2e_latency"] = 0.25
        if finished and steps:  # _calculate_spec_decoding_metrics: only when verified
            proposed = len(steps) * self.width
            meta["spec_accept_rate"] = sum(steps) / proposed
            meta["spec_accept_length"] = self.completion_tokens / len(steps)
            meta["spec_num_correct_drafts"] = sum(steps)
            meta["spec_num_proposed_drafts"] = proposed
            meta["spec_verify_ct"] = len(steps)
            histogram = [0] * (max(steps) + 1)  # Req.update_spec_correct_drafts_histogram
            for c in steps:
                histogram[c] += 1
            meta["spec_correct_drafts_histogram"] = histogram
        return meta


class Writer:
    def __init__(self, sg: types.SimpleNamespace, out: Path) -> None:
        self.sg, self.out = sg, out
        self.written: list[str] = []

    def save(self, name: str, data: str | bytes) -> None:
        raw = data.encode() if isinstance(data, str) else data
        (self.out / name).write_bytes(raw)
        self.written.append(name)

    # --- the OpenAI answers -----------------------------------------------------------------

    def _details(self, runs: list[Run], asked: bool, n: int) -> Any:
        """serving_*: the sglext's spec_tokens_details (a list for n > 1; the first prompt's
        alone for n = 1), None when not asked or nothing was verified."""
        if not asked:
            return None
        found = [
            d for d in (self.sg.utils.spec_tokens_details_from_meta_info(r.meta_info(True))
                        for r in runs) if d is not None
        ]  # fmt: skip
        if not found:
            return None
        return found if n > 1 else found[0]

    def _whole(self, cls: Any, choices: list[Any], runs: list[Run], asked: bool, n: int) -> str:
        """serving_*'s whole answer: usage over every sequence, details where asked."""
        details = self._details(runs, asked, n)
        response = cls(
            id=runs[0].rid, created=CREATED, model=MODEL, choices=choices,
            usage=self.sg.usage.calculate_response_usage(
                [{"meta_info": r.meta_info(True)} for r in runs], n_choices=n,
                enable_cache_report=False),
            metadata={"weight_version": "default"},
            sglext=None if details is None else self.sg.p.SglExt(spec_tokens_details=details),
        )  # fmt: skip
        return str(response.model_dump_json())

    def chat(self, runs: list[Run], asked: bool, n: int = 1) -> str:
        p = self.sg.p
        choices = [
            p.ChatCompletionResponseChoice(
                index=i,
                message=p.ChatMessage(role="assistant", content="".join(r.pieces)),
                finish_reason=r.finish["type"],
                matched_stop=r.finish.get("matched"),
            )
            for i, r in enumerate(runs)
        ]
        return self._whole(p.ChatCompletionResponse, choices, runs, asked, n)

    def completion(self, runs: list[Run], asked: bool, n: int = 1) -> str:
        p = self.sg.p
        choices = [
            p.CompletionResponseChoice(
                index=i, text="".join(r.pieces), finish_reason=r.finish["type"],
                matched_stop=r.finish.get("matched"))
            for i, r in enumerate(runs)
        ]  # fmt: skip
        return self._whole(p.CompletionResponse, choices, runs, asked, n)

    def _usage_chunk(self, cls: Any, run: Run) -> str:
        usage = self.sg.usage.calculate_streaming_usage(
            {0: run.prompt_tokens}, {0: 0}, {0: run.completion_tokens}, cached_tokens={0: 0},
            n_choices=1, enable_cache_report=False)  # fmt: skip
        chunk = cls(id=run.rid, created=CREATED, choices=[], model=MODEL, usage=usage)
        return f"data: {chunk.model_dump_json()}\n\n"

    def _sglext_chunk(self, cls: Any, run: Run, asked: bool) -> str:
        details = self._details([run], asked, 1)
        if details is None:
            return ""
        chunk = cls(id=run.rid, created=CREATED, choices=[], model=MODEL,
                    sglext=self.sg.p.SglExt(spec_tokens_details=details))  # fmt: skip
        return f"data: {chunk.model_dump_json()}\n\n"

    def chat_stream(self, run: Run, asked: bool, include_usage: bool) -> str:
        """_generate_chat_stream: the role chunk, a content chunk per output, the finishing
        chunk, the sglext chunk, the usage chunk when included, [DONE]."""
        build = self.sg.sse.build_sse_content
        out = [build(chunk_id=run.rid, created=CREATED, model=MODEL, index=0,
                     role="assistant", content="")]  # fmt: skip
        out += [build(chunk_id=run.rid, created=CREATED, model=MODEL, index=0, content=piece)
                for piece in run.pieces]  # fmt: skip
        out.append(build(chunk_id=run.rid, created=CREATED, model=MODEL, index=0,
                         finish_reason=run.finish["type"],
                         matched_stop=run.finish.get("matched")))  # fmt: skip
        out.append(self._sglext_chunk(self.sg.p.ChatCompletionStreamResponse, run, asked))
        if include_usage:
            out.append(self._usage_chunk(self.sg.p.ChatCompletionStreamResponse, run))
        out.append("data: [DONE]\n\n")
        return "".join(out)

    def completion_stream(self, run: Run, asked: bool, include_usage: bool) -> str:
        """serving_completions' stream: a CompletionStreamResponse per output (the last with
        its finish_reason), the sglext chunk, the usage chunk when included, [DONE]."""
        p = self.sg.p
        out = []
        for i, piece in enumerate(run.pieces):
            last = i == len(run.pieces) - 1
            choice = p.CompletionResponseStreamChoice(
                index=0, text=piece, finish_reason=run.finish["type"] if last else None,
                matched_stop=run.finish.get("matched") if last else None)  # fmt: skip
            chunk = p.CompletionStreamResponse(
                id=run.rid, created=CREATED, object="text_completion", choices=[choice],
                model=MODEL)  # fmt: skip
            out.append(f"data: {chunk.model_dump_json()}\n\n")
        out.append(self._sglext_chunk(p.CompletionStreamResponse, run, asked))
        if include_usage:
            out.append(self._usage_chunk(p.CompletionStreamResponse, run))
        out.append("data: [DONE]\n\n")
        return "".join(out)

    # --- the native /generate ---------------------------------------------------------------

    def generate(self, run: Run) -> bytes:
        answer = {"text": "".join(run.pieces), "output_ids": list(range(run.completion_tokens)),
                  "meta_info": run.meta_info(True)}  # fmt: skip
        return bytes(self.sg.dumps(answer))

    def generate_stream(self, run: Run) -> bytes:
        """Non-incremental streaming (SGLang's default): each out the whole text so far, the
        spec fields only on the finished one."""
        out = b""
        for i in range(len(run.pieces)):
            finished = i == len(run.pieces) - 1
            answer = {"text": "".join(run.pieces[: i + 1]),
                      "output_ids": list(range(1 + sum(c + 1 for c in run.correct[:i]))),
                      "meta_info": run.meta_info(finished)}  # fmt: skip
            if not finished:  # its counts so far
                answer["meta_info"]["completion_tokens"] = len(answer["output_ids"])
            out += b"data: " + bytes(self.sg.dumps(answer)) + b"\n\n"
        return out + b"data: [DONE]\n\n"


def _run(rid: str, correct: list[int], width: int = 3, prompt: int = 30) -> Run:
    words = ["It", " is", " four", ",", " as", " two", " and", " two", " make", " four", "."]
    pieces = [words[i % len(words)] for i in range(1 + len(correct))]
    return Run(rid, prompt, pieces, correct, width)


def main(out: Path) -> None:
    sg = _import_sglang()
    out.mkdir(parents=True, exist_ok=True)
    w = Writer(sg, out)
    one = _run("8a1e", [2, 0, 1, 3, 1, 0])  # 6 steps at width 3: 7 correct of 18
    w.save("chat.json", w.chat([one], asked=True))
    w.save("chat_plain.json", w.chat([one], asked=False))
    for usage in (False, True):
        tail = "_usage" if usage else ""
        w.save(f"chat_stream{tail}.sse", w.chat_stream(one, True, usage))
        w.save(f"chat_stream{tail}_plain.sse", w.chat_stream(one, False, usage))
        w.save(f"completion_stream{tail}.sse", w.completion_stream(one, True, usage))
        w.save(f"completion_stream{tail}_plain.sse", w.completion_stream(one, False, usage))
    w.save("completion.json", w.completion([one], asked=True))
    w.save("completion_plain.json", w.completion([one], asked=False))
    two = [one, _run("8a1e", [3, 3, 2], prompt=30)]  # n = 2: one request, two sequences
    w.save("chat_n2.json", w.chat(two, asked=True, n=2))
    prompts = [one, _run("9b2f", [0, 0, 1, 0, 0], prompt=12)]  # two prompts, n = 1
    w.save("completion_prompts2.json", w.completion(prompts, asked=True))
    w.save("chat_one_token.json", w.chat([_run("7c3d", [])], asked=True))  # max_tokens 1
    # --speculative-eagle-topk 4 --speculative-num-steps 3 --speculative-num-draft-tokens 8:
    # a tree of 7 nodes verified per step, at most 3 (its depth) accepted
    w.save("chat_tree.json", w.chat([_run("6d4e", [3, 1, 2, 0, 3], width=7)], asked=True))
    native = _run("5f3c", [2, 1, 3, 0, 2, 2, 1, 2, 2], prompt=41)
    w.save("generate.json", w.generate(native))
    w.save("generate_stream.sse", w.generate_stream(native))
    manifest = {"sglang": VERSION, "written_by": "tools/sglang_fixtures.py", "files": w.written}
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/sglang-0.5.23"))
