"""The one query fleet analysis runs on DuckDB: cycle-log lines in, sums per group out.

SQL only aggregates; every statistic is computed from the sums by the sidecar's own code
(fleet/groups.py). What SQL sums per group is the histogram of the steps' (drafted,
accepted) pairs, which gives steps, tokens, trials, the per-position and per-drafted-length
counts exactly, and the sums a request-level interval needs (requests, and the squares and
products of each request's own totals in the group).

Each step belongs to the ctx bucket of its own position, as in the sidecar
(analysis/counting/slicing.py): step j (1-based) of a request with prompt p starts at
p + j + (accepted tokens of the steps before it). Most requests start and end in one bucket
and draft one K <= 7 (in fewer than 32,768 steps): such a request is one row, never
unnested: its steps' histogram is packed into one 128-bit integer (16 bits of count per
accepted value, one list pass) and the group sums each value's count (columns k, h0..h7).
The others (a bucket crossed, K varying along the request or above 7) get each step's
bucket from a prefix sum over the list, quadratic in the request's steps, and are unnested
into histogram entries (code = drafted x 1024 + accepted, with its count c), split into one
part per bucket, each its own request part as in `split_steps`. One row per request, not
one per distinct step, keeps the grouping (most of the query's time) small.

Every line lands in one status: `spec` (counted), `empty` (no speculative step), `baseline`
(an A/B baseline request: decode times only), `config` (a file's config line), `outside`
(before --since or from --until on), `bad` (not a v1 request line: counted and reported).
"""

from __future__ import annotations

from collections.abc import Sequence

# The cycle log's columns as DuckDB reads them (store/cyclelog.py); others are not read.
COLUMNS = {
    "v": "BIGINT",
    "ts": "DOUBLE",
    "model": "VARCHAR",
    "task": "VARCHAR",
    "prompt_tokens": "BIGINT",
    "completion_tokens": "BIGINT",
    "per_step_drafted": "BIGINT[]",
    "per_step_accepted": "BIGINT[]",
    "tpot_ms": "DOUBLE",
    "variant": "VARCHAR",
    "in_flight": "BIGINT",
    "config": "VARCHAR",
    "track": "VARCHAR",
    "ttft_ms": "DOUBLE",
    "outcome": "VARCHAR",
}

# What every query reads; the others only when asked for (fewer columns materialized is a
# third less of the scan's time). request_id is not read: a line's identity does not count.
ALWAYS = frozenset(
    (
        "v",
        "ts",
        "model",
        "task",
        "prompt_tokens",
        "completion_tokens",
        "per_step_drafted",
        "per_step_accepted",
        "variant",
        "config",
    )
)


def needed_columns(dimensions: Sequence[str], with_load: bool) -> frozenset[str]:
    extra = {"track"} & set(dimensions)
    if with_load or "load" in dimensions:
        extra.add("in_flight")
    if with_load:
        extra.add("tpot_ms")
    return ALWAYS | extra


CODE_BASE = 1024  # a step's code: drafted * CODE_BASE + accepted (K and accepted < 1024)
BUCKET_BASE = CODE_BASE * CODE_BASE  # a crossing request's entry: bucket * BUCKET_BASE + code
MAX_TS = 253402300800.0  # 10000-01-01: store/cyclelog.py's bound on unix seconds
# A packed request: accepted values 0..SLOTS-1 (K < SLOTS), each a SLOT_BITS-bit count in a
# signed 128-bit integer: fewer than SLOT_MAX steps keep the top slot off the sign bit.
SLOTS = 8
SLOT_BITS = 16
SLOT_MAX = 1 << (SLOT_BITS - 1)
SLOT_MASK = (1 << SLOT_BITS) - 1

# The result's columns after the group's dimensions, in order.
SUMS = (
    "b",  # ctx bucket index (0 when the query does not split by ctx bucket)
    "status",
    "k",  # packed requests' K (NULL on the other rows)
    "code",  # a crossing request's entry: drafted * CODE_BASE + accepted (else NULL)
    "c",  # steps with that code
    *(f"h{v}" for v in range(SLOTS)),  # packed requests' steps that accepted v of K
    "lines",  # lines of that status (a spec line once, in the part of its first step)
    "requests",  # request parts (one per ctx bucket a request's steps are in)
    "aa",
    "at",
    "tt",
    "ad",
    "dd",
    "as_",
    "ss",
    "max_load",
    "dec_n",
    "dec_x",
    "dec_y",
    "dec_xx",
    "dec_xy",
    "dec_yy",
    "dec_yb",
    "dec_xb",
    "dec_ybb",
    "dec_yyb",
    "dec_yybb",
    "dec_s",
    "dec_ss",
    "dec_xs",
    "dec_ys",
)


def _slot(value: str) -> str:
    """The count of a packed request's steps that accepted `value` (SQL) of K, from h."""
    return f"((h >> ({SLOT_BITS} * {value})) & {SLOT_MASK})::BIGINT"


def _ge_count(value: str, bounds: Sequence[int], strict: bool) -> str:
    """How many bounds `value` is past (bisect_right with >=, bisect_left with >)."""
    if not bounds:
        return "0"
    op = ">" if strict else ">="
    return "(" + " + ".join(f"({value} {op} {int(b)})::BIGINT" for b in bounds) + ")"


def dimension_sql(name: str, load_bounds: Sequence[int]) -> str:
    """A group dimension's SQL (the ctx bucket is the part's own: not here)."""
    if name == "load":
        index = _ge_count("greatest(1, in_flight)", load_bounds, strict=True)
        return f"CASE WHEN in_flight IS NULL THEN -1 ELSE {index} END"
    if name == "day":
        return "CAST(DATE '1970-01-01' + CAST(floor(ts / 86400) AS INTEGER) AS VARCHAR)"
    if name == "config":
        return "coalesce(config, '')"
    if name == "track":
        return "coalesce(track, '')"
    return name  # model, task


def query(
    source: str,
    dimensions: Sequence[str],
    ctx_bounds: Sequence[int],
    load_bounds: Sequence[int],
    since: float | None,
    until: float | None,
    with_load: bool = False,
) -> str:
    """The aggregation over `source` (a FROM item with COLUMNS), grouped by `dimensions`;
    `ctx_bucket` among them is each step's own (column `b`), the others the line's.
    `with_load`: also the largest in_flight and the decode-time sums (a request's once, in
    the ctx bucket of its first step) that the K table and the goodput comparison need."""
    split = "ctx_bucket" in dimensions
    named = [name for name in dimensions if name != "ctx_bucket"]
    dims = [f"{dimension_sql(name, load_bounds)} AS g_{name}" for name in named]
    group = [f"g_{name}" for name in named]
    buckets = Buckets(ctx_bounds if split else None)
    return (
        "\nWITH "
        + statuses(source, since, until)
        + _request_parts(buckets)
        + _grouped_sums(dims, group, with_load)
    )


class Buckets:
    """The ctx bucket index of a position (CtxBuckets.index: bisect_right); 0 for every
    position when the query does not split by ctx bucket."""

    def __init__(self, bounds: Sequence[int] | None) -> None:
        self.bounds = bounds
        self.count = len(bounds) + 1 if bounds is not None else 1

    def of(self, position: str) -> str:
        return "0" if self.bounds is None else _ge_count(position, self.bounds, strict=False)


def statuses(source: str, since: float | None, until: float | None) -> str:
    """Each line with its lists named and its status (module docstring)."""
    window = []
    if since is not None:
        window.append(f"ts < {float(since)!r}")
    if until is not None:
        window.append(f"ts >= {float(until)!r}")
    outside = " OR ".join(window) or "false"
    # a step that accepted more than it drafted (one K: against K; else step by step)
    overrun = (
        "CASE WHEN d_min = d_max THEN a_max > d_min "
        "ELSE list_bool_or(list_transform(range(1, len(a) + 1), lambda j: a[j] > d[j])) END"
    )
    return f"""
lines AS (
  SELECT *, per_step_drafted AS d, per_step_accepted AS a, prompt_tokens AS p,
    len(per_step_accepted) AS n, list_min(per_step_drafted) AS d_min,
    list_max(per_step_drafted) AS d_max, list_max(per_step_accepted) AS a_max
  FROM {source}
),
rows AS (
  SELECT *,
    CASE
      WHEN ts IS NULL AND starts_with(config, '{{') THEN 'config'
      WHEN v IS DISTINCT FROM 1 OR ts IS NULL OR NOT (ts >= 0 AND ts < {MAX_TS!r})
        OR model IS NULL OR task IS NULL
        OR p IS NULL OR p < 0 OR completion_tokens IS NULL OR completion_tokens < 0 THEN 'bad'
      WHEN variant = 'baseline' THEN 'baseline'
      WHEN d IS NULL OR a IS NULL OR len(d) <> n OR list_min(a) < 0 OR d_min < 0 THEN 'bad'
      WHEN n > 0 AND ({overrun}) THEN 'bad'
      WHEN {outside} THEN 'outside'
      WHEN n = 0 THEN 'empty'
      ELSE 'spec'
    END AS status
  FROM lines
),
"""


def _request_parts(buckets: Buckets) -> str:
    """Each counted request packed into one row, or (a bucket crossed, K varying or above 7)
    its steps' histogram by bucket and code, with each bucket's part's sums (list index
    bucket + 1) and the code of the part's first step, which carries them."""
    step_bucket = buckets.of("p + j + coalesce(list_sum(a[1:j - 1]), 0)")
    of_part = "lambda x, i: step_buckets[i] = part_bucket"
    per_bucket = {
        "part_steps": "len(list_filter(step_buckets, lambda x: x = part_bucket))",
        "part_accepted": f"coalesce(list_sum(list_filter(a, {of_part})), 0)::BIGINT",
        "part_drafted": f"coalesce(list_sum(list_filter(d, {of_part})), 0)::BIGINT",
        "part_trials": f"coalesce(list_sum(list_filter(t, {of_part})), 0)::BIGINT",
        "part_first_code": f"list_filter(codes, {of_part})[1]",
    }
    part_lists = ",\n    ".join(
        f"CASE WHEN cut THEN list_transform(range(0, {buckets.count}), "
        f"lambda part_bucket: {expr}) END AS {name}"
        for name, expr in per_bucket.items()
    )
    decode = (
        "status IN ('spec', 'empty', 'baseline') AND tpot_ms IS NOT NULL "
        "AND isfinite(tpot_ms) AND completion_tokens >= 2"
    )
    return f"""spec AS (
  SELECT *, list_sum(a)::BIGINT AS accepted_total,
    CASE WHEN d_min = d_max THEN d_min * n ELSE list_sum(d)::BIGINT END AS drafted_total,
    {buckets.of("p + 1")} AS first_bucket,
    {buckets.of("p + n + accepted_total - a[n]")} AS last_bucket
  FROM rows
),
split AS (
  SELECT *, status = 'spec' AND NOT (d_min = d_max AND first_bucket = last_bucket
    AND d_min < {SLOTS} AND n < {SLOT_MAX}) AS cut,
    status = 'spec' AND NOT cut AS packed
  FROM spec
),
cuts AS (
  SELECT *,
    CASE WHEN cut THEN list_transform(range(1, n + 1), lambda j: {step_bucket}) END AS step_buckets,
    CASE WHEN cut THEN list_transform(range(1, n + 1), lambda j: d[j] * {CODE_BASE} + a[j])
      END AS codes,
    CASE WHEN cut THEN list_transform(range(1, n + 1), lambda j: a[j] + (a[j] < d[j])::BIGINT)
      END AS t,
    CASE WHEN packed THEN list_sum(list_transform(a, lambda x: (1::HUGEINT) << ({SLOT_BITS} * x)))
      END AS h
  FROM split
),
slow AS (
  SELECT *, {part_lists},
    CASE WHEN cut THEN map_entries(list_aggregate(list_transform(range(1, n + 1),
      lambda j: step_buckets[j] * {BUCKET_BASE} + codes[j]), 'histogram'))
      -- every other line: one row, its entry a placeholder
      ELSE [{{'key': -1::BIGINT, 'value': 0::UBIGINT}}] END AS hist,
    CASE WHEN {decode} THEN tpot_ms / 1000.0 * (completion_tokens - 1) END AS dec_x,
    CASE WHEN {decode} THEN CAST(completion_tokens - 1 AS DOUBLE) END AS dec_y,
    -- its engine steps after the first token: those listed, and the plain ones the listed
    -- steps' accepted + 1 tokens leave (analysis/speed/goodput.decode_steps)
    CASE WHEN {decode} THEN CAST(coalesce(n, 0) + greatest(0, completion_tokens - 1
      - coalesce(accepted_total, 0) - coalesce(n, 0)) AS DOUBLE) END AS dec_s
  FROM cuts
),
"""


def _grouped_sums(dims: list[str], group: list[str], with_load: bool) -> str:
    """Every row's request part summed per group, ctx bucket, status and code (SUMS)."""
    # the largest load and the decode-time sums: the K table and the goodput comparison
    load_sums = (
        ", ".join(
            (
                "max(CASE WHEN one = 1 THEN in_flight END) AS max_load",
                "sum(CASE WHEN lead AND one = 1 AND dec_y IS NOT NULL THEN 1 ELSE 0 END) AS dec_n",
                "sum(first * dec_x) AS dec_x",
                "sum(first * dec_y) AS dec_y",
                "sum(first * dec_x * dec_x) AS dec_xx",
                "sum(first * dec_x * dec_y) AS dec_xy",
                "sum(first * dec_y * dec_y) AS dec_yy",
                # the load moments of a comparison at the same load
                # (analysis/counting/sums.DecodeSums)
                "sum(first * dec_y * in_flight) AS dec_yb",
                "sum(first * dec_x * in_flight) AS dec_xb",
                "sum(first * dec_y * in_flight * in_flight) AS dec_ybb",
                "sum(first * dec_y * dec_y * in_flight) AS dec_yyb",
                "sum(first * dec_y * dec_y * in_flight * in_flight) AS dec_yybb",
                # the engine steps: TPOT's two factors (step time, tokens per step)
                "sum(first * dec_s) AS dec_s",
                "sum(first * dec_s * dec_s) AS dec_ss",
                "sum(first * dec_x * dec_s) AS dec_xs",
                "sum(first * dec_y * dec_s) AS dec_ys",
            )
        )
        if with_load
        else "NULL AS max_load, 0 AS dec_n, NULL AS dec_x, NULL AS dec_y, NULL AS dec_xx, "
        "NULL AS dec_xy, NULL AS dec_yy, NULL AS dec_yb, NULL AS dec_xb, NULL AS dec_ybb, "
        "NULL AS dec_yyb, NULL AS dec_yybb, NULL AS dec_s, NULL AS dec_ss, NULL AS dec_xs, "
        "NULL AS dec_ys"
    )
    slot_sums = ",\n  ".join(f"sum({_slot(str(v))}) AS h{v}" for v in range(SLOTS))
    return f"""entries AS (
  SELECT {", ".join(dims) if dims else "1 AS g_"}, status, cut, packed, in_flight, first_bucket,
    accepted_total, drafted_total, n, d_min, h, part_steps, part_accepted, part_drafted,
    part_trials, part_first_code, dec_x, dec_y, dec_s,
    unnest(hist) AS e
  FROM slow
),
sums AS (
  SELECT *,
    CASE WHEN cut THEN e.key // {BUCKET_BASE} ELSE first_bucket END AS b,
    CASE WHEN packed THEN d_min END AS k,
    CASE WHEN cut THEN e.key % {BUCKET_BASE} END AS code,
    CASE WHEN cut THEN e.value::BIGINT END AS c,
    -- the request part's own sums on one row of it: a packed request's only row, a crossing
    -- request's part on the entry of its first step (0 on its other entries)
    CASE WHEN cut THEN (e.key % {BUCKET_BASE} = part_first_code[b + 1])::BIGINT ELSE 1 END AS one,
    CASE WHEN cut THEN b = first_bucket ELSE true END AS lead,
    -- a request's decode time once, in the part of its first step (the goodput's ctx bucket)
    CASE WHEN (CASE WHEN cut THEN b = first_bucket ELSE true END) THEN one ELSE 0 END AS first,
    one * CASE WHEN cut THEN part_accepted[b + 1] ELSE accepted_total END AS row_accepted,
    one * CASE WHEN cut THEN part_drafted[b + 1] ELSE drafted_total END AS row_drafted,
    -- trials: accepted + 1 per step, but K on a step that accepted all K
    one * CASE WHEN cut THEN part_trials[b + 1]
               ELSE accepted_total + n - {_slot("d_min")} END AS row_trials,
    one * CASE WHEN cut THEN part_steps[b + 1] ELSE n END AS row_steps
  FROM entries
)
SELECT {", ".join(group) if group else "g_"}, b, status, k, code,
  sum(c) AS c,
  {slot_sums},
  sum(CASE WHEN lead THEN one ELSE 0 END) AS lines,
  sum(one) AS requests,
  sum(row_accepted * row_accepted) AS aa,
  sum(row_accepted * row_trials) AS at,
  sum(row_trials * row_trials) AS tt,
  sum(row_accepted * row_drafted) AS ad,
  sum(row_drafted * row_drafted) AS dd,
  sum(row_accepted * row_steps) AS as_,
  sum(row_steps * row_steps) AS ss,
  {load_sums}
FROM sums
GROUP BY ALL
-- in one order: the caller adds floating-point sums row by row, and a sum's last bits
-- follow the order of its terms
ORDER BY ALL
"""
