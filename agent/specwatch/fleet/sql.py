"""The one query fleet analysis runs on DuckDB: cycle-log lines in, sums per group out.

SQL only aggregates; every statistic is computed from the sums by the sidecar's own code
(fleet/groups.py). A result row is one (group, ctx bucket, line status, step code), where a
step code is drafted x 1024 + accepted: the histogram of (drafted, accepted) pairs gives
steps, tokens, trials, the per-position and per-drafted-length counts exactly. The sums a
request-level interval needs (requests, and the squares and products of each request's own
totals in the group) are carried by one entry per request part, its first code.

Each step belongs to the ctx bucket of its own position, as in the sidecar
(analysis/slicing.py): step j (1-based) of a request with prompt p starts at
p + j + (accepted tokens of the steps before it). Most requests start and end in one bucket
and draft one K: those are summed as lists (a histogram of their accepted counts), without
unnesting a step. The others (a bucket crossed, or K varying along the request) get each
step's bucket from a prefix sum over the list, quadratic in the request's steps, and are
split into one part per bucket, each its own request-part as in `split_steps`.

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
    "request_id": "VARCHAR",
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
}

CODE_BASE = 1024  # a step's code: drafted * CODE_BASE + accepted (K and accepted < 1024)
MAX_TS = 253402300800.0  # 10000-01-01: store/cyclelog.py's bound on unix seconds

# The result's columns after the group's dimensions, in order.
SUMS = (
    "b",  # ctx bucket index (0 when the query does not split by ctx bucket)
    "status",
    "code",
    "c",  # steps with that code (status spec)
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
)


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
) -> str:
    """The aggregation over `source` (a FROM item with COLUMNS), grouped by `dimensions`;
    `ctx_bucket` among them is each step's own (column `b`), the others the line's."""
    split = "ctx_bucket" in dimensions
    named = [name for name in dimensions if name != "ctx_bucket"]
    dims = [f"{dimension_sql(name, load_bounds)} AS g_{name}" for name in named]
    group = [f"g_{name}" for name in named]

    def bucket(position: str) -> str:
        """The ctx bucket index of a position (CtxBuckets.index: bisect_right)."""
        return _ge_count(position, ctx_bounds, strict=False) if split else "0"

    window = []
    if since is not None:
        window.append(f"ts < {float(since)!r}")
    if until is not None:
        window.append(f"ts >= {float(until)!r}")
    outside = " OR ".join(window) or "false"
    # a step that accepted more than it drafted (one K: against K; else step by step)
    overrun = (
        "CASE WHEN list_min(d) = list_max(d) THEN list_max(a) > d[1] "
        "ELSE list_bool_or(list_transform(range(1, len(a) + 1), lambda j: a[j] > d[j])) END"
    )
    step_bucket = bucket("p + j + coalesce(list_sum(a[1:j - 1]), 0)")
    one_part = (
        "[{'b': b0, 'lead': true, 'k': d[1], 'n': n, 'sa': sa, 'sd': sd, "
        "'st': sa + n - coalesce(ha[d[1]], 0), 'h': ha}]"
    )
    parts = (
        "list_transform(list_distinct(bs), lambda bb: {"
        "'b': bb, 'lead': bb = bs[1], 'k': 0, "
        "'n': len(list_filter(bs, lambda x: x = bb)), "
        "'sa': list_sum(list_filter(a, lambda x, i: bs[i] = bb)), "
        "'sd': list_sum(list_filter(d, lambda x, i: bs[i] = bb)), "
        "'st': list_sum(list_filter(a, lambda x, i: bs[i] = bb)) + "
        "len(list_filter(range(1, n + 1), lambda j: bs[j] = bb AND a[j] < d[j])), "
        f"'h': list_aggregate(list_filter(list_transform(range(1, n + 1), "
        f"lambda j: d[j] * {CODE_BASE} + a[j]), lambda x, i: bs[i] = bb), 'histogram')}})"
    )
    pseudo = (
        "[{'b': 0, 'lead': true, 'k': 0, 'n': 0, 'sa': 0, 'sd': 0, 'st': 0, "
        "'h': MAP([-1::BIGINT], [1::UBIGINT])}]"
    )
    decode = (
        "status IN ('spec', 'empty', 'baseline') AND tpot_ms IS NOT NULL "
        "AND isfinite(tpot_ms) AND completion_tokens >= 2"
    )
    return f"""
WITH lines AS (
  SELECT *, per_step_drafted AS d, per_step_accepted AS a, prompt_tokens AS p,
    len(per_step_accepted) AS n
  FROM {source}
),
rows AS (
  SELECT *,
    CASE
      WHEN ts IS NULL AND starts_with(config, '{{') THEN 'config'
      WHEN v IS DISTINCT FROM 1 OR ts IS NULL OR NOT (ts >= 0 AND ts < {MAX_TS!r})
        OR request_id IS NULL OR model IS NULL OR task IS NULL
        OR p IS NULL OR p < 0 OR completion_tokens IS NULL OR completion_tokens < 0 THEN 'bad'
      WHEN variant = 'baseline' THEN 'baseline'
      WHEN d IS NULL OR a IS NULL OR len(d) <> n OR list_min(a) < 0 OR list_min(d) < 0
        THEN 'bad'
      WHEN n > 0 AND ({overrun}) THEN 'bad'
      WHEN {outside} THEN 'outside'
      WHEN n = 0 THEN 'empty'
      ELSE 'spec'
    END AS status
  FROM lines
),
spec AS (
  SELECT *, list_sum(a) AS sa, list_sum(d) AS sd,
    list_min(d) = list_max(d) AS uni,
    {bucket("p + 1")} AS b0,
    {bucket("p + n + list_sum(a) - a[n]")} AS b1
  FROM rows
),
split AS (
  SELECT *,
    CASE WHEN status = 'spec' AND uni AND b0 = b1 THEN list_aggregate(a, 'histogram') END AS ha,
    CASE WHEN status = 'spec' AND NOT (uni AND b0 = b1)
      THEN list_transform(range(1, n + 1), lambda j: {step_bucket}) END AS bs
  FROM spec
),
parts AS (
  SELECT {", ".join(dims) if dims else "1 AS g_"}, status, in_flight,
    CASE WHEN {decode} THEN tpot_ms / 1000.0 * (completion_tokens - 1) END AS dec_x,
    CASE WHEN {decode} THEN CAST(completion_tokens - 1 AS DOUBLE) END AS dec_y,
    unnest(CASE WHEN status <> 'spec' THEN {pseudo}
                WHEN uni AND b0 = b1 THEN {one_part}
                ELSE {parts} END) AS pt
  FROM split
),
entries AS (
  SELECT *, unnest(map_entries(pt.h)) AS e, map_keys(pt.h)[1] AS first FROM parts
)
SELECT {", ".join(group) if group else "g_"}, pt.b AS b, status,
  CASE WHEN e.key < 0 THEN -1 ELSE pt.k * {CODE_BASE} + e.key END AS code,
  sum(e.value) AS c,
  count(*) FILTER (WHERE e.key = first AND pt.lead) AS lines,
  count(*) FILTER (WHERE e.key = first) AS requests,
  sum(pt.sa * pt.sa) FILTER (WHERE e.key = first) AS aa,
  sum(pt.sa * pt.st) FILTER (WHERE e.key = first) AS at,
  sum(pt.st * pt.st) FILTER (WHERE e.key = first) AS tt,
  sum(pt.sa * pt.sd) FILTER (WHERE e.key = first) AS ad,
  sum(pt.sd * pt.sd) FILTER (WHERE e.key = first) AS dd,
  sum(pt.sa * pt.n) FILTER (WHERE e.key = first) AS as_,
  sum(pt.n * pt.n) FILTER (WHERE e.key = first) AS ss,
  max(in_flight) FILTER (WHERE e.key = first) AS max_load,
  count(dec_y) FILTER (WHERE e.key = first) AS dec_n,
  sum(dec_x) FILTER (WHERE e.key = first) AS dec_x,
  sum(dec_y) FILTER (WHERE e.key = first) AS dec_y,
  sum(dec_x * dec_x) FILTER (WHERE e.key = first) AS dec_xx,
  sum(dec_x * dec_y) FILTER (WHERE e.key = first) AS dec_xy,
  sum(dec_y * dec_y) FILTER (WHERE e.key = first) AS dec_yy
FROM entries
GROUP BY ALL
"""
