#!/usr/bin/env bash
# (The measuring harness of the performance issue #15, kept here so the repository measures
# itself; `make bench` runs it with `specwatch replay` as the candidate. apt-get install mtail.)
# Throughput anchor: mtail (Debian 3.0.0~rc50) turning one log line per speculative step into
# per-(model, task, ctx) counters, vs a plain single-process Python reference on the same data as
# cycle log v1 JSONL (and on the text log), and (optionally) a candidate command, all timed with
# /usr/bin/time -v. mtail is the Go binary; GOMAXPROCS in the environment reaches it.
#   mtail_anchor.sh [RUNS=3] [-- CANDIDATE...]
# Each candidate (one argument each, several allowed: timed in the same run) runs via bash -c
# with $LOG (per-step text log), $JSONL (cycle log v1) and $STEPS exported, e.g.:
#   mtail_anchor.sh 3 -- 'specwatch replay "$JSONL" --json > /dev/null' \
#     'specwatch analyze "$JSONL" --threads 1 --quiet --json > /dev/null'
# Env: W=<cache>/mtail-anchor  LINES=2000000  SEED=20261129  SKIP_PY=1 (no Python reference runs).
# Data is generated once (seeded, deterministic) and reused; a small file validates the mtail
# program against the Python reference (exact match) before timing; after timing, mtail's counters
# over the big log are checked against the Python reference's counters over the big JSONL.
set -u -o pipefail
RUNS=3; case "${1:-}" in ''|--) ;; *) RUNS=$1; shift ;; esac; [ "${1:-}" = "--" ] && shift; CANDS=("$@")
W=${W:-${XDG_CACHE_HOME:-$HOME/.cache}/specwatch-perf/mtail-anchor}; LINES=${LINES:-2000000}; SEED=${SEED:-20261129}
MTAIL=${MTAIL:-/usr/bin/mtail}
mkdir -p "$W/progs" "$W/out"; cd "$W" || exit 1

# ---------------------------------------------------------------- the mtail program
cat > progs/spec_steps.mtail <<'MT'
# One line per speculative step:
# <ts> model=<m> task=<t> ctx=<bucket> drafted=<K> accepted=<0..K>
counter spec_steps_total by model, task, ctx
counter spec_drafted_tokens_total by model, task, ctx
counter spec_accepted_tokens_total by model, task, ctx
counter spec_trials_total by model, task, ctx
counter spec_accepted_by_pos_total by model, task, ctx, pos

/^\d+\.\d+ model=(?P<model>\S+) task=(?P<task>\S+) ctx=(?P<ctx>\S+) drafted=(?P<drafted>\d+) accepted=(?P<accepted>\d+)$/ {
  spec_steps_total[$model][$task][$ctx]++
  spec_drafted_tokens_total[$model][$task][$ctx] += $drafted
  spec_accepted_tokens_total[$model][$task][$ctx] += $accepted
  $accepted < $drafted {
    spec_trials_total[$model][$task][$ctx] += $accepted + 1
  } else {
    spec_trials_total[$model][$task][$ctx] += $accepted
  }
  $accepted >= 1 {
    spec_accepted_by_pos_total[$model][$task][$ctx]["1"]++
  }
  $accepted >= 2 {
    spec_accepted_by_pos_total[$model][$task][$ctx]["2"]++
  }
  $accepted >= 3 {
    spec_accepted_by_pos_total[$model][$task][$ctx]["3"]++
  }
  $accepted >= 4 {
    spec_accepted_by_pos_total[$model][$task][$ctx]["4"]++
  }
  $accepted >= 5 {
    spec_accepted_by_pos_total[$model][$task][$ctx]["5"]++
  }
  $accepted >= 6 {
    spec_accepted_by_pos_total[$model][$task][$ctx]["6"]++
  }
  $accepted >= 7 {
    spec_accepted_by_pos_total[$model][$task][$ctx]["7"]++
  }
}
MT

# ---------------------------------------------------------------- generator (seeded)
cat > gen.py <<'PY'
"""gen.py LINES SEED STEPS_LOG JSONL: one text line per step + the same data as cycle log v1."""
import json, random, sys
lines, seed, log_path, jsonl_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = random.Random(seed)
MODELS = (["llama3.1-8b-eagle3", "qwen2.5-7b-ngram"], [0.6, 0.4])
TASKS = (["code", "chat", "summarization", "rag", "other"], [0.25, 0.35, 0.15, 0.15, 0.10])
ALPHA = {"code": 0.80, "chat": 0.62, "summarization": 0.85, "rag": 0.75, "other": 0.55}
# ctx bucket = current position (prompt + generated) in [lo, hi); prompt_tokens is chosen so the
# whole request (prompt + completion) stays inside its bucket: per-request and per-step agree.
CTX = [("0-512", 0, 512), ("512-2k", 512, 2048), ("2k-4k", 2048, 4096), ("4k-8k", 4096, 8192),
       ("8k-32k", 8192, 32768), ("32k+", 32768, 131072)]
CTX_W = [0.30, 0.30, 0.18, 0.12, 0.08, 0.02]
ts, left, r = 1764400000.0, lines, 0
DT = 0.02  # seconds per step; step j of a request is logged at ts + DT*(j+1)
with open(log_path, "w") as flog, open(jsonl_path, "w") as fj:
    buf = []
    while left > 0:
        model = rng.choices(*MODELS)[0]
        task = rng.choices(*TASKS)[0]
        name, lo, hi = rng.choices(CTX, CTX_W)[0]
        k = rng.randint(3, 7)
        n = min(rng.randint(10, 30), left)
        a_ = ALPHA[task]
        acc = []
        for _ in range(n):
            a = 0
            while a < k and rng.random() < a_:
                a += 1
            acc.append(a)
        completion = 1 + sum(acc) + n  # prefill token + (accepted + 1) per step
        prompt = rng.randint(max(lo, 1), hi - completion - 1)
        for j, a in enumerate(acc):
            buf.append(f"{ts + DT * (j + 1):.6f} model={model} task={task} ctx={name} drafted={k} accepted={a}\n")
        fj.write(json.dumps({"v": 1, "ts": round(ts, 6), "request_id": f"req-{r:07d}", "model": model,
                             "task": task, "prompt_tokens": prompt, "completion_tokens": completion,
                             "num_spec_tokens": k, "per_step_drafted": [k] * n, "per_step_accepted": acc,
                             "ttft_ms": None, "tpot_ms": None, "e2e_ms": None}, separators=(",", ":")) + "\n")
        if len(buf) >= 100000:
            flog.writelines(buf); buf.clear()
        ts += DT * (n + 1) + 0.005
        left -= n; r += 1
    flog.writelines(buf)
print(f"generated {lines} steps in {r} requests", file=sys.stderr)
PY

# ---------------------------------------------------------------- Python reference
cat > ref.py <<'PY'
"""ref.py text|jsonl FILE OUT.json: the same counters as spec_steps.mtail, plain single process."""
import bisect, json, sys
from collections import defaultdict
mode, path, out = sys.argv[1:4]
steps, drafted, accepted, trials, bypos = (defaultdict(int) for _ in range(5))
def count(key, d, a):
    steps[key] += 1; drafted[key] += d; accepted[key] += a
    trials[key] += a + 1 if a < d else a
    for i in range(1, a + 1):
        bypos[key + (str(i),)] += 1
if mode == "text":
    with open(path) as f:
        for line in f:
            _, m, t, c, d, a = line.split()
            count((m[6:], t[5:], c[4:]), int(d[8:]), int(a[9:]))
else:
    EDGES = [512, 2048, 4096, 8192, 32768]
    NAMES = ["0-512", "512-2k", "2k-4k", "4k-8k", "8k-32k", "32k+"]
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            m, t = r["model"], r["task"]
            pos = r["prompt_tokens"] + 1          # prefill produced the first token
            for d, a in zip(r["per_step_drafted"], r["per_step_accepted"]):
                count((m, t, NAMES[bisect.bisect_right(EDGES, pos)]), d, a)
                pos += a + 1
res = {name: {"|".join(k): v for k, v in c.items()} for name, c in
       [("spec_steps_total", steps), ("spec_drafted_tokens_total", drafted),
        ("spec_accepted_tokens_total", accepted), ("spec_trials_total", trials),
        ("spec_accepted_by_pos_total", bypos)]}
json.dump(res, open(out, "w"), sort_keys=True)
PY

# ---------------------------------------------------------------- helpers
cat > cmp.py <<'PY'
"""cmp.py MTAIL.prom REF.json [REF2.json]: exact comparison of every series (prog label dropped)."""
import json, re, sys
prom, refs = sys.argv[1], sys.argv[2:]
got = {}
pat = re.compile(r'^(\w+)\{(.*)\} (\S+)$')
for line in open(prom):
    m = pat.match(line.strip())
    if not m:
        continue
    labels = dict(kv.split("=", 1) for kv in re.findall(r'\w+="[^"]*"', m.group(2)))
    labels = {k: v.strip('"') for k, v in labels.items()}
    key = [labels["model"], labels["task"], labels["ctx"]] + ([labels["pos"]] if "pos" in labels else [])
    got.setdefault(m.group(1), {})["|".join(key)] = int(float(m.group(3)))
ok = True
for r in refs:
    want = json.load(open(r))
    n = sum(len(v) for v in want.values())
    if got == want:
        print(f"  exact match: {prom} == {r} ({n} series)")
    else:
        ok = False
        for name in sorted(set(got) | set(want)):
            g, w = got.get(name, {}), want.get(name, {})
            bad = [k for k in set(g) | set(w) if g.get(k) != w.get(k)]
            if bad:
                print(f"  MISMATCH {name}: {len(bad)} series, e.g. {bad[0]} mtail={g.get(bad[0])} ref={w.get(bad[0])}")
sys.exit(0 if ok else 1)
PY
cat > summ.py <<'PY'
"""summ.py STEPS LINES NAME TIMEFILE...: one row from /usr/bin/time -v outputs (mean and range)."""
import re, sys
steps, lines, name, files = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
rows = []
for f in files:
    t = open(f).read()
    w = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", t).group(1).split(":")
    wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w)))
    cpu = float(re.search(r"User time \(seconds\): (\S+)", t).group(1)) + \
          float(re.search(r"System time \(seconds\): (\S+)", t).group(1))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
    try:
        j, hz = open(f + ".busy").read().split()
        other = max(0.0, int(j) / int(hz) - cpu)
    except OSError:
        other = float("nan")
    rows.append((wall, cpu, rss, other))
mean = lambda i: max(sum(r[i] for r in rows) / len(rows), 0.005)   # /usr/bin/time: 10 ms steps
walls = [r[0] for r in rows]
print(f"| {name} | {len(rows)} | {mean(0):.2f} ({min(walls):.2f}-{max(walls):.2f}) | {mean(1):.2f} | "
      f"{max(r[2] for r in rows):.0f} | {lines / mean(0):,.0f} | {steps / mean(0):,.0f} | {mean(1) / steps * 1e6:.2f} | "
      f"{max(r[3] for r in rows):.1f} |")
PY

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }   # machine-wide busy jiffies
timed() {  # timed TIMEFILE CMD...: /usr/bin/time -v, plus machine-wide busy CPU in TIMEFILE.busy
  local tf=$1 b0 rc; shift; b0=$(busy)
  /usr/bin/time -v -o "$tf" "$@"; rc=$?
  echo "$(( $(busy) - b0 )) $(getconf CLK_TCK)" > "$tf.busy"; return $rc
}
MT_FLAGS="--one_shot --one_shot_format prometheus --logtostderr --port 0 --address 127.0.0.1"
mtail_run() {  # mtail_run LOGFILE OUT_PREFIX [TIMEFILE]
  if [ -n "${3:-}" ]; then
    timed "$3" "$MTAIL" $MT_FLAGS --progs "$W/progs" --logs "$1" > "$2.prom" 2> "$2.err"
  else
    "$MTAIL" $MT_FLAGS --progs "$W/progs" --logs "$1" > "$2.prom" 2> "$2.err"
  fi
}

# ---------------------------------------------------------------- data (generated once)
LOG=$W/steps-$LINES-$SEED.log; JSONL=$W/cycles-$LINES-$SEED.jsonl
if [ ! -s "$LOG" ] || [ ! -s "$JSONL" ]; then
  echo "generating $LINES steps (seed $SEED) ..."
  python3 gen.py "$LINES" "$SEED" "$LOG.tmp" "$JSONL.tmp" && mv "$LOG.tmp" "$LOG" && mv "$JSONL.tmp" "$JSONL" || exit 1
fi
STEPS=$(wc -l < "$LOG"); REQS=$(wc -l < "$JSONL")
echo "mtail: $("$MTAIL" --version | head -1)"
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); GOMAXPROCS=${GOMAXPROCS:-unset}"
echo "data: $LOG  $STEPS lines, $(stat -c %s "$LOG") bytes ($(sha256sum "$LOG" | cut -c1-12))"
echo "      $JSONL  $REQS lines, $(stat -c %s "$JSONL") bytes ($(sha256sum "$JSONL" | cut -c1-12))"

# ---------------------------------------------------------------- validation on a small file
S=$W/small; [ -s "$S.log" ] && [ -s "$S.jsonl" ] || python3 gen.py 20000 7 "$S.log" "$S.jsonl"
mtail_run "$S.log" out/small || { echo "mtail failed on the small file"; cat out/small.err; exit 1; }
python3 ref.py text "$S.log" out/small.ref_text.json && python3 ref.py jsonl "$S.jsonl" out/small.ref_jsonl.json
echo "validate (20000 steps, seed 7):"
python3 cmp.py out/small.prom out/small.ref_text.json out/small.ref_jsonl.json || exit 1

# ---------------------------------------------------------------- timing
rm -f out/mtail.* out/py.* out/pytext.* out/cand*
cat "$LOG" "$JSONL" > /dev/null   # page cache warm for every contender
echo "timing, $RUNS runs each:"
for i in $(seq 1 "$RUNS"); do
  mtail_run "$LOG" "out/mtail.$i" "out/mtail.$i.time" || { echo "mtail run $i failed"; tail out/mtail.$i.err; exit 1; }
  if [ -z "${SKIP_PY:-}" ]; then
    timed "out/py.$i.time" python3 ref.py jsonl "$JSONL" out/py.$i.json || exit 1
    timed "out/pytext.$i.time" python3 ref.py text "$LOG" out/pytext.$i.json || exit 1
  fi
  for c in "${!CANDS[@]}"; do
    LOG=$LOG JSONL=$JSONL STEPS=$STEPS timed "out/cand$c.$i.time" bash -c "${CANDS[$c]}" \
      || echo "candidate $c run $i: rc=$?"
  done
done
echo "| contender | runs | wall s mean (range) | CPU s (user+sys) | max RSS MiB | lines/s | steps/s | CPU s / 1M steps | others' CPU s (max run) |"
echo "|---|---|---|---|---|---|---|---|---|"
python3 summ.py "$STEPS" "$STEPS" "mtail one-shot, text log" out/mtail.*.time
if [ -z "${SKIP_PY:-}" ]; then
  python3 summ.py "$STEPS" "$REQS" "python json+dict, JSONL" out/py.*.time
  python3 summ.py "$STEPS" "$STEPS" "python split+dict, text log" out/pytext.*.time
fi
for c in "${!CANDS[@]}"; do python3 summ.py "$STEPS" "$STEPS" "candidate: ${CANDS[$c]}" out/cand$c.*.time; done
echo "(lines/s = lines of that contender's own input, steps for a candidate; steps/s = $STEPS steps / mean wall;"
echo " others' CPU = machine-wide busy CPU during a run minus the contender's own: load from other processes)"
echo "full-size cross-check (mtail over the text log vs Python over the JSONL):"
if [ -z "${SKIP_PY:-}" ]; then python3 cmp.py out/mtail.1.prom out/py.1.json out/pytext.1.json
else python3 ref.py jsonl "$JSONL" out/py.1.json && python3 cmp.py out/mtail.1.prom out/py.1.json; fi
