"""A simulated vLLM 0.32 speculative server: the response shapes of tests/fixtures.

`/v1/completions` and `/v1/chat/completions` (streaming or not, include_usage, the per-request
`metrics.speculative_decoding` block), `/v1/models`, `/health`, and `/metrics` whose
`vllm:spec_decode_*` counters agree with what it served (sim/metrics.py). A request may carry
`X-Sim-Fail` (sim/requests.py: Fault) for tests. `reported_steps` counts the speculative steps
of the responses that carried their metrics to the end, so a test can reconcile exactly what a
client could have seen.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from specwatch import conventions as C
from specwatch.sim import engines, sglang, shapes
from specwatch.sim.acceptance import AcceptanceModel, CostModel, plan_steps
from specwatch.sim.metrics import SimMetrics
from specwatch.sim.requests import BadRequest, Fault, error_response, fault_of, limits, task_of
from specwatch.sim.shapes import Generation

# the vLLM release whose behaviour the simulator follows (tests/fixtures/vllm-0.32.0-cpu)
SIM_VERSION = "0.32.0"


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
    # vLLM's per-request mean_acceptance_length over-counting by this much (vLLM#56101 at EOS):
    # the engine_disagreement cause
    tau_overcount: float = 0.0
    version: str = SIM_VERSION  # what GET /version answers, as vLLM does
    # vLLM's --enable-force-include-usage: usage in every stream, in every chunk too
    force_include_usage: bool = False
    # answer like another engine (sim/engines.py): llamacpp, trtllm, sglang
    engine: str = "vllm"
    # trtllm: Prometheus at /prometheus/metrics, as with `return_perf_metrics` (else none)
    trtllm_prometheus: bool = True


class SimServer:
    """The simulator; `app()` gives the aiohttp application."""

    def __init__(self, config: SimConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.acceptance = config.acceptance  # replaceable while serving (drift, recovery)
        self.metrics = SimMetrics(config.model, config.num_spec_tokens, config.engine == "trtllm")
        self._clock = clock
        self._started = clock()
        # the model card's creation time is fixed at start: a card whose `created` moves with
        # the second could not be compared byte for byte, direct against proxied
        self._created = int(time.time())
        self.reported_steps = 0  # steps of responses whose metrics reached the client
        self.metrics_json_reads = 0  # trtllm: reads of its drained JSON /metrics
        self.corrupted = 0  # requests whose output a simulated bug changed (corrupt_share)
        self.in_flight = 0  # the batch a step runs in (CostModel.batch_compute)
        self.received = 0  # generation requests that reached it (tests wait for one to arrive)

    def restart_clock(self) -> None:
        """Scheduled drops count from now: from the load's start, not the server's, so a slow
        start (a loaded machine) does not eat into the time before a drop."""
        self._started = self._clock()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        if self.config.engine == "llamacpp":  # no /version: its build is in /props
            app.router.add_get("/props", self._props)
        else:
            app.router.add_get("/version", self._version)
        app.router.add_get("/metrics", self._metrics)
        if self.config.engine == "trtllm" and self.config.trtllm_prometheus:
            app.router.add_get(C.TRTLLM_METRICS_PATH, self._trtllm_metrics)
        if self.config.engine == "vllm":
            app.router.add_post(C.GENERATE_PATH, self._token_generate)
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

    async def _version(self, _request: web.Request) -> web.Response:
        return web.json_response({"version": self.config.version})

    async def _props(self, _request: web.Request) -> web.Response:
        return web.json_response({"build_info": engines.BUILD_INFO, "total_slots": 1})

    async def _trtllm_metrics(self, _request: web.Request) -> web.Response:
        assert self.metrics.trtllm is not None  # the route is there only for trtllm
        page = generate_latest(self.metrics.trtllm.registry)
        return web.Response(body=page, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _metrics(self, _request: web.Request) -> web.Response:
        if self.config.engine == "trtllm":  # trtllm-serve's: JSON iteration stats, drained
            self.metrics_json_reads += 1
            return web.json_response([])
        if self.config.engine == "vllm":
            page = generate_latest(self.metrics.registry)
        else:
            page = engines.metrics_page(
                self.config.engine, self.metrics.totals(), self.config.model
            )
        return web.Response(body=page, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _token_generate(self, request: web.Request) -> web.StreamResponse:
        """vLLM's token-in, token-out endpoint: `token_ids` in, `metrics` out as on the OpenAI
        paths (its own body: the choice's `token_ids`, no usage)."""
        return await self._generate(request, chat=False)

    async def _models(self, _request: web.Request) -> web.Response:
        card = {
            "id": self.config.model,
            "object": "model",
            "created": self._created,
            "owned_by": engines.OWNED_BY[self.config.engine],
            "root": self.config.model,
            "parent": None,
            "max_model_len": self.config.max_model_len,
        }
        return web.json_response(
            {"object": "list", "data": [card]}, dumps=lambda obj: orjson.dumps(obj).decode()
        )

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=False)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=True)

    def _prepare(self, request: web.Request, body: Any, chat: bool) -> Generation:
        cfg = self.config
        prompt_tokens, max_tokens = limits(body, cfg.model, cfg.max_model_len, chat)
        fault = fault_of(request.headers)
        if fault == Fault.INTERNAL:
            raise BadRequest(500, "simulated internal error", "InternalServerError", None)
        options = body.get("stream_options")
        options = options if isinstance(options, dict) else {}
        include_usage = cfg.force_include_usage or options.get("include_usage") is True
        continuous = cfg.force_include_usage or (
            include_usage and options.get("continuous_usage_stats") is True
        )  # vLLM 0.32's should_include_usage
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
        return Generation(
            request_id=("chatcmpl-" if chat else "cmpl-") + request_id,
            model=cfg.model,
            chat=chat,
            created=int(time.time()),
            prompt_tokens=prompt_tokens,
            max_tokens=max_tokens,
            task=task,
            stream=body.get("stream") is True,
            include_usage=include_usage,
            continuous_usage=continuous,
            fault=fault,
            steps=steps,
            text_rng=random.Random(hashlib.sha256(key + b"text").digest()),
            corrupt_at=self._corrupt_at(key, max_tokens),
            return_ids=body.get("return_token_ids") is True,
            spec_details=body.get("return_spec_tokens_details") is True,
        )

    async def _generate(self, request: web.Request, chat: bool) -> web.StreamResponse:
        self.received += 1
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError as error:
            return error_response(400, f"Invalid JSON: {error}", "BadRequestError", None)
        try:
            gen = self._prepare(request, body, chat)
        except BadRequest as bad:
            return error_response(bad.status, str(bad), bad.error_type, bad.param)
        if gen.fault == Fault.HTML:
            page = "<html><body>upstream busy</body></html>"
            return web.Response(text=page, content_type="text/html")
        labels = self.metrics.labels()
        self.metrics.running.labels(**labels).inc()
        self.in_flight += 1
        try:
            if gen.stream:
                return await self._stream(request, gen)
            return await self._whole(request, gen)
        except asyncio.CancelledError:  # the client went away: vLLM counts an abort
            self.metrics.finished.labels(**labels, finished_reason="abort").inc()
            raise
        finally:
            self.metrics.running.labels(**labels).dec()
            self.in_flight -= 1

    # --- generation ----------------------------------------------------------------------------

    def _corrupt_at(self, key: bytes, max_tokens: int) -> int:
        if not self.config.corrupt_share:
            return -1
        rng = random.Random(hashlib.sha256(key + b"corrupt").digest())
        if rng.random() >= self.config.corrupt_share:
            return -1
        self.corrupted += 1
        return rng.randrange(max_tokens)

    async def _run(self, gen: Generation) -> AsyncIterator[tuple[str, bool]]:
        """Yield (text, finished) per engine step, sleeping as the cost model says."""
        cost, metrics = self.config.cost, self.metrics
        labels = metrics.labels()
        started = time.perf_counter()
        metrics.prompt_tokens.labels(**labels).inc(gen.prompt_tokens)
        metrics.interval.prompt += gen.prompt_tokens
        await self._sleep(cost.prefill_seconds(gen.prompt_tokens))
        metrics.generation_tokens.labels(**labels).inc()
        metrics.ttft.labels(**labels).observe(time.perf_counter() - started)
        yield gen.text(1), not gen.steps
        cut_at = len(gen.steps) // 2 if gen.fault == Fault.CUT else -1
        for i, step in enumerate(gen.steps):
            if i == cut_at:
                raise ConnectionAbortedError("X-Sim-Fail: cut")
            await self._sleep(cost.of_step(step, self.config.num_spec_tokens, self.in_flight))
            metrics.step(step)
            yield gen.text(step.emitted), i == len(gen.steps) - 1
        metrics.e2e.labels(**labels).observe(time.perf_counter() - started)
        metrics.finished.labels(**labels, finished_reason="length").inc()

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds if self.config.sleep else 0)

    def _dressed(self, obj: dict[str, Any], gen: Generation, generation: float) -> dict[str, Any]:
        """A body or finishing chunk in the configured engine's shape (vLLM's as it is)."""
        cfg = self.config
        if cfg.engine == "vllm" or cfg.spec_metrics == "none":
            return obj
        if cfg.engine == "sglang" and not gen.spec_details:  # sent only when asked
            obj.pop("metrics", None)
            return obj
        fields = engines.engine_fields(cfg.engine, gen, cfg.num_spec_tokens, generation)
        if cfg.engine == "llamacpp":  # usage on the finishing chunk, asked or not
            obj["usage"] = shapes.usage(gen)
        return engines.dress(obj, fields)

    def _event(self, piece: dict[str, Any]) -> bytes:
        """A stream chunk as the engine writes it (SGLang's layout: sim/sglang.py)."""
        if self.config.engine == "sglang":
            return b"".join(shapes.event(shaped) for shaped in sglang.events(piece))
        return shapes.event(piece)

    def _metrics_block(self, gen: Generation, ttft: float, generation: float) -> dict[str, Any]:
        cfg = self.config
        block = shapes.metrics_block(gen, cfg.spec_metrics, cfg.num_spec_tokens, ttft, generation)
        spec = block.get("speculative_decoding")
        if cfg.tau_overcount and isinstance(spec, dict) and "mean_acceptance_length" in spec:
            spec["mean_acceptance_length"] += cfg.tau_overcount
        return block

    def _listed(self, gen: Generation) -> int:
        """The steps the metrics block lists (0 when no block is sent)."""
        if self.config.spec_metrics == "none" or (
            self.config.engine == "sglang" and not gen.spec_details
        ):
            return 0
        return len(gen.listed())

    async def _whole(self, request: web.Request, gen: Generation) -> web.StreamResponse:
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
        metrics = self._metrics_block(gen, ttft, generation)
        whole = self._dressed(shapes.body(gen, "".join(texts), metrics), gen, generation)
        if self.config.engine == "sglang":
            whole = sglang.body(whole, gen, whole.get("sglext"))
        data = orjson.dumps(whole)
        if gen.fault == Fault.TRUNCATE:
            data = data[: len(data) // 2]
        elif gen.fault == Fault.BAD_JSON:
            data = b"{" + data  # not JSON any more
        else:
            self.reported_steps += self._listed(gen)
        return web.Response(body=data, content_type="application/json", headers=_id_header(request))

    async def _stream(self, request: web.Request, gen: Generation) -> web.StreamResponse:
        response = web.StreamResponse(headers=_id_header(request))
        response.content_type = "text/event-stream"
        await response.prepare(request)
        started = time.perf_counter()
        ttft = 0.0
        if gen.chat:
            await response.write(self._event(shapes.role_chunk(gen)))
        half = (len(gen.steps) + 1) // 2
        try:
            async for i, (text, finished) in _enumerate(self._run(gen)):
                if i == 0:
                    ttft = time.perf_counter() - started
                if gen.fault == Fault.TRUNCATE and i == half:
                    await response.write_eof()  # a clean end, halfway: no usage, no [DONE]
                    return response
                if gen.fault == Fault.BAD_JSON and i == half:
                    await response.write(b'data: {"id": broken\n\n')
                if gen.fault == Fault.SLOW:
                    await asyncio.sleep(0.05)
                piece = shapes.chunk(gen, text, finished)
                if finished and self.config.engine not in ("vllm", "sglang"):
                    piece = self._dressed(piece, gen, time.perf_counter() - started - ttft)
                    self.reported_steps += self._listed(gen)
                await response.write(self._event(piece))
            if self.config.engine == "sglang" and gen.spec_details:
                # SGLang's details: a chunk of their own, before usage
                piece = self._dressed(shapes.empty_chunk(gen), gen, 0.0)
                self.reported_steps += self._listed(gen)
                await response.write(self._event(piece))
        except ConnectionAbortedError:
            assert request.transport is not None
            request.transport.close()
            return response
        except ConnectionResetError:  # the client went away mid-stream: vLLM aborts quietly
            self.metrics.finished.labels(**self.metrics.labels(), finished_reason="abort").inc()
            return response
        if gen.include_usage and self.config.engine != "llamacpp":
            metrics = self._metrics_block(gen, ttft, time.perf_counter() - started - ttft)
            usage = shapes.usage_chunk(gen, metrics)
            if self.config.engine != "vllm":
                usage.pop("metrics")  # its data went on the finishing chunk
            else:
                self.reported_steps += self._listed(gen)
            await response.write(self._event(usage))
        if gen.fault == Fault.SLOW:
            await asyncio.sleep(0.05)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


async def _enumerate(
    items: AsyncIterator[tuple[str, bool]],
) -> AsyncIterator[tuple[int, tuple[str, bool]]]:
    i = 0
    async for item in items:
        yield i, item
        i += 1


def _id_header(request: web.Request) -> dict[str, str]:
    request_id = request.headers.get(C.Header.REQUEST_ID)
    return {"x-request-id": request_id} if request_id else {}
