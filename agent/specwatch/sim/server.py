"""A simulated vLLM 0.32 speculative server: the response shapes of tests/fixtures.

`/v1/completions` and `/v1/chat/completions` (streaming or not, include_usage, the per-request
`metrics.speculative_decoding` block), `/v1/models`, `/health`, and `/metrics` whose
`vllm:spec_decode_*` counters agree with what it served, counted step by step as vLLM does (so
an aborted request's steps are counted even though no response carries them).

For tests, a request may carry `X-Sim-Fail`: `500` (an internal error before any step), `cut`
(the connection is cut after half the steps: an engine killed mid-stream), `truncate` (the
answer simply stops halfway, cleanly closed: no usage, no `[DONE]`; a JSON body is cut in
half), `bad-json` (a stream gets one malformed event in the middle; a JSON body is not JSON),
`html` (a 200 with an HTML page, no generation) or `slow` (50 ms between stream chunks).
`reported_steps` counts the speculative steps of the responses that carried their metrics to
the end, so a test can reconcile exactly what a client could have seen.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from specwatch import conventions as C
from specwatch.sim.acceptance import AcceptanceModel, CostModel, Step, plan_steps

FINGERPRINT = "vllm-0.32.0-specwatch-sim"
WORDS = (
    "the", "model", "draft", "token", "accept", "verify", "step", "cache", "batch", "speed",
    "def", "return", "value", "data", "layer", "(", ")", ":", "\n", "    ",
)  # fmt: skip
TASK_MARKER = "[task:"


@dataclass(frozen=True, slots=True)
class SimConfig:
    model: str = "sim-llama"
    num_spec_tokens: int = 4
    max_model_len: int = 65536
    seed: int = 0
    spec_metrics: str = "detailed"  # detailed | summary | none, like vLLM's flag
    acceptance: AcceptanceModel = field(default_factory=AcceptanceModel)
    cost: CostModel = field(default_factory=CostModel)
    sleep: bool = True  # False: no latency at all (fast tests)
    # Output tokens do not depend on speculation (it is lossless): the same request gives the
    # same text at any K. A buggy server is simulated by changing one token in this share of
    # the requests (chosen per request, seeded).
    corrupt_share: float = 0.0


class BadRequest(Exception):
    def __init__(self, status: int, message: str, error_type: str, param: str | None) -> None:
        super().__init__(message)
        self.status, self.error_type, self.param = status, error_type, param


def error_response(status: int, message: str, error_type: str, param: str | None) -> web.Response:
    body = {"error": {"message": message, "type": error_type, "param": param, "code": status}}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def count_prompt_tokens(body: dict[str, Any]) -> int:
    """One token per whitespace-separated word; chat adds 4 per message for the template."""
    messages = body.get("messages")
    if isinstance(messages, list):
        total = 0
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            total += 4 + (len(content.split()) if isinstance(content, str) else 0)
        return total
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return len(prompt)
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if isinstance(prompt, str):
        return max(1, len(prompt.split()))
    raise BadRequest(400, "Either prompt or messages must be given.", "BadRequestError", "prompt")


def task_of(headers: Any, body: dict[str, Any]) -> str:
    header = headers.get(C.Header.TASK)
    if header:
        return str(header).strip().lower()
    text = orjson.dumps(body.get("prompt") or body.get("messages") or "").decode()
    at = text.find(TASK_MARKER)
    if at >= 0:
        end = text.find("]", at)
        if end > at:
            return text[at + len(TASK_MARKER) : end]
    return "chat"


class IntervalStats:
    """What vLLM's periodic stats lines report: counts since the previous line."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.drafts = 0
        self.drafted = 0
        self.accepted = 0
        self.per_position: list[int] = []
        self.generated = 0
        self.prompt = 0

    def step(self, step: Step) -> None:
        self.drafts += 1
        self.drafted += step.drafted
        self.accepted += step.accepted
        if len(self.per_position) < step.drafted:
            self.per_position += [0] * (step.drafted - len(self.per_position))
        for i in range(step.accepted):
            self.per_position[i] += 1

    def lines(self, seconds: float, running: int, waiting: int) -> list[str]:
        """The `Engine 000` and `SpecDecoding metrics` lines vLLM 0.32 would print."""
        stamp = time.strftime("%m-%d %H:%M:%S")
        prefix = f"(APIServer pid={os.getpid()}) INFO {stamp}"
        out = [
            f"{prefix} [loggers.py:335] Engine 000: Avg prompt throughput: "
            f"{self.prompt / seconds:.1f} tokens/s, Avg generation throughput: "
            f"{self.generated / seconds:.1f} tokens/s, Running: {running} reqs, Waiting: "
            f"{waiting} reqs, CPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%"
        ]
        if self.drafts:
            per_position = ", ".join(f"{n / self.drafts:.3f}" for n in self.per_position)
            out.append(
                f"{prefix} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
                f"{1 + self.accepted / self.drafts:.2f}, Accepted throughput: "
                f"{self.accepted / seconds:.2f} tokens/s, Drafted throughput: "
                f"{self.drafted / seconds:.2f} tokens/s, Accepted: {self.accepted} tokens, "
                f"Drafted: {self.drafted} tokens, Per-position acceptance rate: {per_position}, "
                f"Avg Draft acceptance rate: {100 * self.accepted / max(1, self.drafted):.1f}%"
            )
        return out


class SimMetrics:
    """vLLM's own metric names, on a registry of this server's."""

    def __init__(self, model: str, num_spec_tokens: int) -> None:
        self.registry = CollectorRegistry()
        labels = ["model_name", "engine"]
        self._labels = {"model_name": model, "engine": "0"}

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, labels, registry=self.registry)

        self.drafts = counter(C.VLLM_NUM_DRAFTS, "Number of spec decoding drafts.")
        self.draft_tokens = counter(C.VLLM_NUM_DRAFT_TOKENS, "Number of draft tokens.")
        self.accepted = counter(C.VLLM_NUM_ACCEPTED_TOKENS, "Number of accepted tokens.")
        self.per_pos = Counter(
            C.VLLM_NUM_ACCEPTED_PER_POS,
            "Accepted tokens per draft position.",
            [*labels, "position"],
            registry=self.registry,
        )
        self.prompt_tokens = counter(C.VLLM_PROMPT_TOKENS, "Number of prefill tokens processed.")
        self.generation_tokens = counter(C.VLLM_GENERATION_TOKENS, "Number of generation tokens.")
        self.ttft = Histogram(
            C.VLLM_TTFT_SECONDS, "Time to first token.", labels, registry=self.registry
        )
        self.e2e = Histogram(
            C.VLLM_E2E_SECONDS, "End-to-end request latency.", labels, registry=self.registry
        )
        self.running = Gauge(
            C.VLLM_REQUESTS_RUNNING, "Running requests.", labels, registry=self.registry
        )
        self.finished = Counter(
            C.VLLM_REQUEST_SUCCESS,
            "Finished requests by reason.",
            [*labels, "finished_reason"],
            registry=self.registry,
        )
        self.interval = IntervalStats()
        # Like vLLM, every series exists from the start at 0: a scraper's first sample is a
        # true baseline, not one taken after the first requests.
        for family in (self.drafts, self.draft_tokens, self.accepted, self.prompt_tokens,
                       self.generation_tokens):  # fmt: skip
            family.labels(**self._labels)
        for position in range(num_spec_tokens):
            self.per_pos.labels(**self._labels, position=str(position))
        for reason in ("stop", "length", "abort", "error"):
            self.finished.labels(**self._labels, finished_reason=reason)

    def step(self, step: Step) -> None:
        labels = self._labels
        self.generation_tokens.labels(**labels).inc(step.emitted)
        self.interval.generated += step.emitted
        if not step.drafted:
            return
        self.drafts.labels(**labels).inc()
        self.draft_tokens.labels(**labels).inc(step.drafted)
        self.accepted.labels(**labels).inc(step.accepted)
        for position in range(step.accepted):
            self.per_pos.labels(**labels, position=str(position)).inc()
        self.interval.step(step)

    def labels(self) -> dict[str, str]:
        return self._labels

    def total(self, name: str) -> float:
        """The value of counter `name` (vLLM's name, without `_total`)."""
        return self.registry.get_sample_value(name + "_total", self._labels) or 0.0


@dataclass(slots=True)
class _Generation:
    request_id: str
    chat: bool
    created: int
    prompt_tokens: int
    max_tokens: int
    task: str
    stream: bool
    include_usage: bool
    fail: str | None  # X-Sim-Fail (see the module docstring)
    rng: random.Random
    steps: list[Step]
    text_rng: random.Random
    corrupt_at: int  # the output token changed by a simulated bug; -1: none
    return_ids: bool
    ids: list[int] = field(default_factory=list)
    last_ids: list[int] = field(default_factory=list)


class SimServer:
    """The simulator; `app()` gives the aiohttp application."""

    def __init__(self, config: SimConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.acceptance = config.acceptance  # replaceable while serving (drift, recovery)
        self.metrics = SimMetrics(config.model, config.num_spec_tokens)
        self._clock = clock
        self._started = clock()
        self.reported_steps = 0  # steps of responses whose metrics reached the client
        self.corrupted = 0  # requests whose output a simulated bug changed (corrupt_share)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def log_stats(self, interval: float, write: Callable[[str], None]) -> None:
        """Print vLLM's stats lines every `interval` seconds while there is traffic."""
        while True:
            await asyncio.sleep(interval)
            stats = self.metrics.interval
            running = self.metrics.registry.get_sample_value(
                C.VLLM_REQUESTS_RUNNING, self.metrics.labels()
            )
            if stats.drafts or stats.generated or running:
                for line in stats.lines(interval, int(running or 0), 0):
                    write(line)
                stats.reset()

    async def _health(self, _request: web.Request) -> web.Response:
        return web.Response()

    async def _metrics(self, _request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self.metrics.registry),
            headers={"Content-Type": CONTENT_TYPE_LATEST},
        )

    async def _models(self, _request: web.Request) -> web.Response:
        created = int(time.time())
        card = {
            "id": self.config.model,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": self.config.model,
            "parent": None,
            "max_model_len": self.config.max_model_len,
        }
        return web.json_response({"object": "list", "data": [card]}, dumps=_dumps)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=False)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=True)

    def _prepare(self, request: web.Request, body: Any, chat: bool) -> _Generation:
        cfg = self.config
        if not isinstance(body, dict):
            raise BadRequest(
                400, "The request body must be a JSON object.", "BadRequestError", None
            )
        if body.get("model", cfg.model) != cfg.model:
            raise BadRequest(
                404, f"The model `{body.get('model')}` does not exist.", "NotFoundError", "model"
            )
        n = body.get("n", 1)
        temperature = body.get("temperature", 1.0)
        if n != 1 and temperature == 0:
            raise BadRequest(
                400, f"n must be 1 when using greedy sampling, got {n}.", "BadRequestError", None
            )
        prompt_tokens = count_prompt_tokens(body)
        default_max = cfg.max_model_len - prompt_tokens if chat else 16
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or default_max
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise BadRequest(400, "max_tokens must be at least 1.", "BadRequestError", "max_tokens")
        if max_tokens > cfg.max_model_len:
            raise BadRequest(
                400,
                f"max_tokens={max_tokens} cannot be greater than max_model_len="
                f"{cfg.max_model_len}. Please request fewer output tokens. "
                f"(parameter=max_tokens, value={max_tokens})",
                "BadRequestError",
                "max_tokens",
            )
        if prompt_tokens + max_tokens > cfg.max_model_len:
            raise BadRequest(
                400,
                f"This model's maximum context length is {cfg.max_model_len} tokens. However, "
                f"your request has {prompt_tokens + max_tokens} tokens.",
                "BadRequestError",
                "input_tokens",
            )
        if request.headers.get(C.Header.SIM_FAIL) == "500":
            raise BadRequest(500, "simulated internal error", "InternalServerError", None)
        options = body.get("stream_options")
        # Same request, same output: the seed ignores transport options such as stream_options.
        key = orjson.dumps(
            [cfg.seed, body.get("prompt"), body.get("messages"), max_tokens, body.get("seed")],
            option=orjson.OPT_SORT_KEYS,
        )
        rng = random.Random(hashlib.sha256(key).digest())
        task = task_of(request.headers, body)
        elapsed = self._clock() - self._started
        steps = plan_steps(
            rng, self.acceptance, cfg.num_spec_tokens, task, prompt_tokens, max_tokens, elapsed
        )
        request_id = (
            request.headers.get(C.Header.REQUEST_ID) or uuid.UUID(int=rng.getrandbits(128)).hex
        )
        return _Generation(
            request_id=("chatcmpl-" if chat else "cmpl-") + request_id,
            chat=chat,
            created=int(time.time()),
            prompt_tokens=prompt_tokens,
            max_tokens=max_tokens,
            task=task,
            stream=body.get("stream") is True,
            include_usage=isinstance(options, dict) and options.get("include_usage") is True,
            fail=request.headers.get(C.Header.SIM_FAIL),
            rng=rng,
            steps=steps,
            text_rng=random.Random(hashlib.sha256(key + b"text").digest()),
            corrupt_at=self._corrupt_at(key, max_tokens),
            return_ids=body.get("return_token_ids") is True,
        )

    async def _generate(self, request: web.Request, chat: bool) -> web.StreamResponse:
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError as error:
            return error_response(400, f"Invalid JSON: {error}", "BadRequestError", None)
        try:
            gen = self._prepare(request, body, chat)
        except BadRequest as bad:
            return error_response(bad.status, str(bad), bad.error_type, bad.param)
        if gen.fail == "html":
            page = "<html><body>upstream busy</body></html>"
            return web.Response(text=page, content_type="text/html")
        labels = self.metrics.labels()
        self.metrics.running.labels(**labels).inc()
        try:
            if gen.stream:
                return await self._stream(request, gen)
            return await self._whole(request, gen)
        except asyncio.CancelledError:  # the client went away: vLLM counts an abort
            self.metrics.finished.labels(**labels, finished_reason="abort").inc()
            raise
        finally:
            self.metrics.running.labels(**labels).dec()

    # --- generation ----------------------------------------------------------------------------

    def _corrupt_at(self, key: bytes, max_tokens: int) -> int:
        if not self.config.corrupt_share:
            return -1
        rng = random.Random(hashlib.sha256(key + b"corrupt").digest())
        if rng.random() >= self.config.corrupt_share:
            return -1
        self.corrupted += 1
        return rng.randrange(max_tokens)

    def _text(self, gen: _Generation, n: int) -> str:
        ids: list[int] = []
        for _ in range(n):
            token = gen.text_rng.randrange(len(WORDS))
            if len(gen.ids) + len(ids) == gen.corrupt_at:
                token = (token + 1) % len(WORDS)
            ids.append(token)
        gen.ids += ids
        gen.last_ids = ids
        return "".join(" " + WORDS[i] for i in ids)

    async def _run(self, gen: _Generation) -> Any:
        """Yield (text, finished) per engine step, sleeping as the cost model says."""
        cost = self.config.cost
        started = time.perf_counter()
        self.metrics.prompt_tokens.labels(**self.metrics.labels()).inc(gen.prompt_tokens)
        self.metrics.interval.prompt += gen.prompt_tokens
        await self._sleep(cost.prefill_seconds(gen.prompt_tokens))
        self.metrics.generation_tokens.labels(**self.metrics.labels()).inc()
        ttft = time.perf_counter() - started
        self.metrics.ttft.labels(**self.metrics.labels()).observe(ttft)
        yield self._text(gen, 1), not gen.steps
        cut_at = len(gen.steps) // 2 if gen.fail == "cut" else -1
        for i, step in enumerate(gen.steps):
            if i == cut_at:
                raise ConnectionAbortedError("X-Sim-Fail: cut")
            await self._sleep(cost.step_seconds(step.drafted))
            self.metrics.step(step)
            yield self._text(gen, step.emitted), i == len(gen.steps) - 1
        self.metrics.e2e.labels(**self.metrics.labels()).observe(time.perf_counter() - started)
        self.metrics.finished.labels(**self.metrics.labels(), finished_reason="length").inc()

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds if self.config.sleep else 0)

    def _metrics_block(self, gen: _Generation, ttft: float, generation: float) -> dict[str, Any]:
        completion = gen.max_tokens
        block: dict[str, Any] = {
            "time_to_first_token_ms": ttft * 1000.0,
            "generation_time_ms": generation * 1000.0,
            "queue_time_ms": 0.02,
            "mean_itl_ms": generation * 1000.0 / max(1, completion - 1),
            "tokens_per_second": completion / max(1e-9, ttft + generation),
        }
        mode = self.config.spec_metrics
        listed = [s for s in gen.steps if s.drafted]
        if mode == "none" or not listed:
            return block
        k = self.config.num_spec_tokens
        drafted = [s.drafted for s in listed]
        accepted = [s.accepted for s in listed]
        histogram = [0] * (k + 1)
        for a in accepted:
            histogram[a] += 1
        spec: dict[str, Any] = {
            "mean_acceptance_length": 1.0 + sum(accepted) / len(listed),
            "draft_acceptance_rate": sum(accepted) / sum(drafted),
            "acceptance_histogram": histogram,
            "num_spec_steps": len(listed),
            "num_accepted_draft_tokens": sum(accepted),
            "num_draft_tokens": sum(drafted),
            "num_spec_tokens": k,
        }
        if mode == "detailed":
            spec["per_step_accepted"] = accepted
            spec["per_step_drafted"] = drafted
        block["speculative_decoding"] = spec
        return block

    def _usage(self, gen: _Generation) -> dict[str, Any]:
        return {
            "prompt_tokens": gen.prompt_tokens,
            "total_tokens": gen.prompt_tokens + gen.max_tokens,
            "completion_tokens": gen.max_tokens,
        }

    async def _whole(self, request: web.Request, gen: _Generation) -> web.StreamResponse:
        started = time.perf_counter()
        texts: list[str] = []
        ttft = 0.0
        try:
            async for text, _ in self._run(gen):
                if not texts:
                    ttft = time.perf_counter() - started
                texts.append(text)
        except ConnectionAbortedError:
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=500)
        generation = time.perf_counter() - started - ttft
        text = "".join(texts)
        if gen.chat:
            choice: dict[str, Any] = {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": text,
                    "refusal": None,
                    "annotations": None,
                    "audio": None,
                    "function_call": None,
                    "reasoning": None,
                },
                "logprobs": None,
                "finish_reason": "length",
                "stop_reason": None,
                "token_ids": gen.ids if gen.return_ids else None,
                "routed_experts": None,
            }
            tail: dict[str, Any] = {
                "prompt_logprobs": None,
                "prompt_token_ids": None,
                "prompt_text": None,
            }
        else:
            choice = {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": "length",
                "stop_reason": None,
                "token_ids": gen.ids if gen.return_ids else None,
                "prompt_logprobs": None,
                "prompt_token_ids": None,
                "routed_experts": None,
            }
            tail = {}
        body = {
            "id": gen.request_id,
            "object": "chat.completion" if gen.chat else "text_completion",
            "created": gen.created,
            "model": self.config.model,
            "choices": [choice],
            "service_tier": None,
            "system_fingerprint": FINGERPRINT,
            "usage": {**self._usage(gen), "prompt_tokens_details": None},
            **tail,
            "kv_transfer_params": None,
            "ec_transfer_params": None,
            "metrics": self._metrics_block(gen, ttft, generation),
        }
        body["usage"]["completion_tokens_details"] = None
        data = orjson.dumps(body)
        if gen.fail == "truncate":
            data = data[: len(data) // 2]
        elif gen.fail == "bad-json":
            data = b"{" + data  # not JSON any more
        else:
            self.reported_steps += self._listed(gen)
        return web.Response(body=data, content_type="application/json", headers=_id_header(request))

    def _listed(self, gen: _Generation) -> int:
        """The steps the metrics block lists (0 when no block is sent)."""
        if self.config.spec_metrics == "none":
            return 0
        return sum(1 for step in gen.steps if step.drafted)

    def _chunk(self, gen: _Generation, text: str, finished: bool) -> dict[str, Any]:
        if gen.chat:
            delta: dict[str, Any] = {"content": text}
            choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None}
            choice["finish_reason"] = "length" if finished else None
            if finished:
                choice["stop_reason"] = None
            choice["token_ids"] = gen.last_ids if gen.return_ids else None
            obj = "chat.completion.chunk"
        else:
            choice = {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": "length" if finished else None,
                "stop_reason": None,
                "prompt_token_ids": None,
                "token_ids": gen.last_ids if gen.return_ids else None,
            }
            obj = "text_completion"
        chunk: dict[str, Any] = {
            "id": gen.request_id,
            "object": obj,
            "created": gen.created,
            "model": self.config.model,
            "choices": [choice],
        }
        if finished and not gen.include_usage:
            chunk["system_fingerprint"] = FINGERPRINT
        return chunk

    async def _stream(self, request: web.Request, gen: _Generation) -> web.StreamResponse:
        response = web.StreamResponse(headers=_id_header(request))
        response.content_type = "text/event-stream"
        await response.prepare(request)
        started = time.perf_counter()
        ttft = 0.0
        if gen.chat:
            role = {
                "id": gen.request_id,
                "object": "chat.completion.chunk",
                "created": gen.created,
                "model": self.config.model,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ],
                "prompt_token_ids": None,
                "prompt_text": None,
            }
            await response.write(_event(role))
        first = True
        half = (len(gen.steps) + 1) // 2
        try:
            i = 0
            async for text, finished in self._run(gen):
                if first:
                    ttft = time.perf_counter() - started
                    first = False
                if gen.fail == "truncate" and i == half:
                    await response.write_eof()  # a clean end, halfway: no usage, no [DONE]
                    return response
                if gen.fail == "bad-json" and i == half:
                    await response.write(b'data: {"id": broken\n\n')
                if gen.fail == "slow":
                    await asyncio.sleep(0.05)
                await response.write(_event(self._chunk(gen, text, finished)))
                i += 1
        except ConnectionAbortedError:
            assert request.transport is not None
            request.transport.close()
            return response
        except ConnectionResetError:  # the client went away mid-stream: vLLM aborts quietly
            self.metrics.finished.labels(**self.metrics.labels(), finished_reason="abort").inc()
            return response
        if gen.include_usage:
            generation = time.perf_counter() - started - ttft
            usage_chunk: dict[str, Any] = {
                "id": gen.request_id,
                "object": "chat.completion.chunk" if gen.chat else "text_completion",
                "created": gen.created,
                "model": self.config.model,
                "choices": [],
                "usage": self._usage(gen),
                "system_fingerprint": FINGERPRINT,
                "metrics": self._metrics_block(gen, ttft, generation),
            }
            await response.write(_event(usage_chunk))
            self.reported_steps += self._listed(gen)
        if gen.fail == "slow":
            await asyncio.sleep(0.05)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _dumps(obj: Any) -> str:
    return orjson.dumps(obj).decode()


def _event(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _id_header(request: web.Request) -> dict[str, str]:
    request_id = request.headers.get(C.Header.REQUEST_ID)
    return {"x-request-id": request_id} if request_id else {}
