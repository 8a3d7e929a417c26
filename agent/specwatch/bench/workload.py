"""What `specwatch bench` sends: the built-in mixed workload, or a ShareGPT-format dataset.

Built-in (seeded, so two runs send the same requests): the task mix of the simulator's workload
(code 30%, chat 30%, summarization 15%, translation 15%, reasoning 10%), prompt lengths
log-uniform between `min_prompt_words` and `max_prompt_words` (every context bucket gets
traffic, short ones a little more), half chat and half completions. Each prompt starts with
`[task:NAME]` and the request carries the task header, so a simulator and specwatch's slicing
both know the true task.

ShareGPT: a JSON list of `{"conversations": [{"from": "human", "value": ...}, ...]}`; the first
human turn is the prompt (as a chat message), the task comes from specwatch's classifier.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from specwatch.proxy.tasks import classify, features_of
from specwatch.settings import TaskSettings
from specwatch.sim.workload import FILLER, OPENERS, TASK_WEIGHTS

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"


class DatasetError(Exception):
    """A dataset file that cannot be used; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class BenchRequest:
    """One request of the workload, sent identically to every target."""

    index: int
    task: str
    chat: bool
    prompt: str
    max_tokens: int
    temperature: float | None = None  # quality samples: their own temperature and seed
    seed: int | None = None

    @property
    def path(self) -> str:
        return CHAT_PATH if self.chat else COMPLETIONS_PATH

    def body(
        self, model: str, temperature: float, seed: int | None, token_ids: bool = True
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": self.max_tokens,
            "temperature": temperature if self.temperature is None else self.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
            "ignore_eos": True,  # vLLM: the same length from every target, or latencies differ
        }
        if token_ids:
            body["return_token_ids"] = True  # vLLM: output token ids, for the identity check
        seed = seed if self.seed is None else self.seed
        if seed is not None:
            body["seed"] = seed
        if self.chat:
            body["messages"] = [{"role": "user", "content": self.prompt}]
        else:
            body["prompt"] = self.prompt
        return body


def builtin(
    n: int,
    *,
    seed: int,
    max_tokens: int,
    min_prompt_words: int = 16,
    max_prompt_words: int = 6000,
) -> list[BenchRequest]:
    if not 1 <= min_prompt_words <= max_prompt_words:
        raise DatasetError("prompt lengths: need 1 <= min <= max")
    rng = random.Random(seed)
    tasks, weights = list(TASK_WEIGHTS), list(TASK_WEIGHTS.values())
    low, high = math.log(min_prompt_words), math.log(max_prompt_words + 1)
    out = []
    for index in range(n):
        task = rng.choices(tasks, weights=weights)[0]
        words = int(math.exp(rng.uniform(low, high)))
        opener = f"[task:{task}] {OPENERS[task]}".split()
        filler = [FILLER[rng.randrange(len(FILLER))] for _ in range(max(0, words - len(opener)))]
        prompt = " ".join((opener + filler)[: max(words, 1)])
        out.append(BenchRequest(index, task, rng.random() < 0.5, prompt, max_tokens))
    return out


def quality_requests(
    prompts: Sequence[BenchRequest], samples: int, temperature: float, first_seed: int
) -> list[BenchRequest]:
    """`samples` seeded samples of each prompt at `temperature`: seeds first_seed, +1, ..."""
    return [
        replace(prompt, index=i, temperature=temperature, seed=first_seed + s)
        for i, prompt in enumerate(prompts)
        for s in range(samples)
    ]


def _first_human_turn(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    turns = item.get("conversations")
    if not isinstance(turns, list):
        return None
    for turn in turns:
        if isinstance(turn, dict) and turn.get("from") in ("human", "user"):
            value = turn.get("value")
            return value if isinstance(value, str) and value.strip() else None
    return None


def sharegpt(
    path: Path,
    n: int,
    *,
    seed: int,
    max_tokens: int,
    tasks: TaskSettings,
    max_prompt_chars: int | None = None,
) -> tuple[list[BenchRequest], int]:
    """`n` prompts drawn (seeded) from the file, and how many entries had no usable prompt."""
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as error:
        raise DatasetError(f"{path}: {error.strerror or error}") from error
    except orjson.JSONDecodeError as error:
        raise DatasetError(f"{path}: not JSON ({error})") from error
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of conversations")
    prompts: list[str] = []
    skipped = 0
    for item in data:
        prompt = _first_human_turn(item)
        if prompt is None or (max_prompt_chars is not None and len(prompt) > max_prompt_chars):
            skipped += 1
        else:
            prompts.append(prompt)
    if not prompts:
        raise DatasetError(f"{path}: no conversation with a human turn")
    rng = random.Random(seed)
    chosen: Sequence[str] = (
        rng.sample(prompts, n) if n <= len(prompts) else [rng.choice(prompts) for _ in range(n)]
    )
    out = []
    for index, prompt in enumerate(chosen):
        body = {"messages": [{"role": "user", "content": prompt}]}
        task = classify(features_of(CHAT_PATH, None, body), tasks)
        out.append(BenchRequest(index, task, True, prompt, max_tokens))
    return out, skipped
