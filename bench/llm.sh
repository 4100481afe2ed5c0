#!/usr/bin/env bash
# Streamed LLM tokens per generator CPU-second: pado vs a Python client written as
# vLLM's benchmark_serving and LLMPerf write theirs (asyncio + aiohttp from PyPI, one
# task per concurrent stream, each `data:` line parsed as JSON, a timestamp taken per
# token for TTFT and ITL), paired in one run against the demo target's streaming
# `/v1/chat/completions` (batch limit above the concurrency, 20 ms a token, no
# prefill: every stream runs at once and the pacing is the same for both clients).
# The target on CPU 0, the client on CPU 1, STREAMS concurrent streams of TOKENS
# tokens each for DUR seconds, REPEATS runs each, interleaved. Reports CPU seconds
# (user + system, /usr/bin/time) per 1,000 streamed tokens for each and the ratio;
# the goal is pado under a third of Python's.
#   bash bench/llm.sh        (DUR=20 REPEATS=2 STREAMS=1000 TOKENS=64 DECODE_MS=20;
#                             PADO=FILE: that binary, else this checkout's release build;
#                             PADO_OLD=FILE: an older pado too, run in the same rounds
#                             (old, new, python), its figures and new/old beside)
# Each run's line also says the tokens per second per stream each client got against
# the paced 50 (a starved target or client gets fewer: its figures mean less) and its
# context switches per 1,000 tokens (a wakeup per token costs more than its parse).
# Not part of the test suite. Needs python3 with venv; PyPI reachable (aiohttp).
set -uo pipefail
export PADO_HOME="${TMPDIR:-/tmp}/pado-bench-history"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DUR="${DUR:-20}"
REPEATS="${REPEATS:-2}"
STREAMS="${STREAMS:-1000}"
TOKENS="${TOKENS:-64}"
# The target's pacing: milliseconds per token of each stream (20: 50 tokens/s a stream).
DECODE_MS="${DECODE_MS:-20}"
OUT="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/pado-bench-llm.XXXXXX")}"
mkdir -p "$OUT"
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing: apt-get install time"; exit 1; }
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true
if [ -n "${PADO:-}" ]; then
  cp "$PADO" "$OUT/pado.bin" || exit 1
else
  (cd "$ROOT" && cargo build --release --quiet -p pado) || exit 1
  cp "$ROOT/target/release/pado" "$OUT/pado.bin"
fi
# TARGET_PADO=FILE serves the demo target from that binary (default: the same one).
TARGET_BIN="${TARGET_PADO:-$OUT/pado.bin}"
PADO="$OUT/pado.bin"
if [ -n "${PADO_OLD:-}" ]; then
  cp "$PADO_OLD" "$OUT/pado-old.bin" || exit 1
fi

python3 -m venv "$OUT/venv" >"$OUT/venv.log" 2>&1 || { echo "python3 -m venv failed (see $OUT/venv.log)"; exit 1; }
"$OUT/venv/bin/pip" install --quiet aiohttp >>"$OUT/venv.log" 2>&1 \
  || { echo "pip install aiohttp failed (see $OUT/venv.log)"; exit 1; }

taskset -c 0 "$TARGET_BIN" target serve --port 0 --exit-after 30m \
  --llm-batch-limit $((STREAMS * 2)) --llm-decode-ms-per-token "$DECODE_MS" \
  --llm-prefill-ms-per-1k-tokens 0 --llm-batch-slowdown 0 >"$OUT/target.out" 2>&1 &
TGT=$!
trap 'kill $TGT 2>/dev/null; rm -rf "$OUT/venv"' EXIT
for _ in $(seq 1 100); do grep -q "listening on" "$OUT/target.out" && break; sleep 0.1; done
URL="$(sed -n 's/^listening on //p' "$OUT/target.out")"
[ -n "$URL" ] || { echo "the demo target did not start"; cat "$OUT/target.out"; exit 1; }

cat >"$OUT/llm.yaml" <<YAML
name: bench-llm
target: $URL
defaults: { timeout: 60s }
scenarios:
  chat:
    executor: constant-vus
    vus: $STREAMS
    duration: ${DUR}s
    flow:
      - name: chat
        request:
          method: POST
          url: /v1/chat/completions
          json: { model: demo, stream: true, max_tokens: $TOKENS, messages: [ { role: user, content: "Write a haiku about load testing" } ] }
        sse: { until: "[DONE]", llm: true }
YAML

cat >"$OUT/client.py" <<'PY'
# The Python client: vLLM benchmark_serving's way of reading an OpenAI stream.
import asyncio, json, sys, time
import aiohttp

URL, STREAMS, DUR, TOKENS = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
tokens = 0
ttfts, itls = [], []

async def one(session, deadline):
    global tokens
    body = {"model": "demo", "stream": True, "max_tokens": TOKENS,
            "messages": [{"role": "user", "content": "Write a haiku about load testing"}]}
    while time.perf_counter() < deadline:
        st = time.perf_counter()
        most_recent = st
        ttft = 0.0
        async with session.post(URL + "/v1/chat/completions", json=body) as resp:
            async for chunk_bytes in resp.content:
                chunk_bytes = chunk_bytes.strip()
                if not chunk_bytes:
                    continue
                chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
                if chunk == "[DONE]":
                    break
                data = json.loads(chunk)
                if data["choices"] and data["choices"][0]["delta"].get("content"):
                    now = time.perf_counter()
                    if ttft == 0.0:
                        ttft = now - st
                        ttfts.append(ttft)
                    else:
                        itls.append(now - most_recent)
                    most_recent = now
                    tokens += 1

async def main():
    deadline = time.perf_counter() + DUR
    conn = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:
        await asyncio.gather(*(one(session, deadline) for _ in range(STREAMS)))
    print(json.dumps({"tokens": tokens, "streams": len(ttfts)}))

asyncio.run(main())
PY

cpu_of() { # FILE.time → user+sys seconds
  awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u+s}' "$1"
}
switches_of() { # FILE.time → voluntary + involuntary context switches
  awk -F': ' '/Voluntary context switches/ {v=$2} /Involuntary context switches/ {n=$2} END {print v+n}' "$1"
}
tokens_of() { # RESULT-DIR → output tokens in its summary.json
  python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["sse"]["llm"]["output_tokens"]))' "$1/summary.json" 2>/dev/null || echo 0
}
run_pado() { # BIN NAME: one pado run, CPU 1
  rm -rf "$OUT/$2.dir"
  /usr/bin/time -v -o "$OUT/$2.time" taskset -c 1 "$1" run "$OUT/llm.yaml" \
    --out "$OUT/$2.dir" --quiet >"$OUT/$2.out" 2>&1
}
for i in $(seq 1 "$REPEATS"); do
  ot=0; oc=0; os=0
  if [ -n "${PADO_OLD:-}" ]; then
    run_pado "$OUT/pado-old.bin" "pado-old-$i"
    ot="$(tokens_of "$OUT/pado-old-$i.dir")"; oc="$(cpu_of "$OUT/pado-old-$i.time")"
    os="$(switches_of "$OUT/pado-old-$i.time")"
  fi
  run_pado "$PADO" "pado-$i"
  /usr/bin/time -v -o "$OUT/python-$i.time" taskset -c 1 "$OUT/venv/bin/python" \
    "$OUT/client.py" "$URL" "$STREAMS" "$DUR" "$TOKENS" >"$OUT/python-$i.out" 2>"$OUT/python-$i.err"
  pt="$(tokens_of "$OUT/pado-$i.dir")"
  yt="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read())["tokens"])' "$OUT/python-$i.out" 2>/dev/null || echo 0)"
  pc="$(cpu_of "$OUT/pado-$i.time")"; yc="$(cpu_of "$OUT/python-$i.time")"
  ps="$(switches_of "$OUT/pado-$i.time")"; ys="$(switches_of "$OUT/python-$i.time")"
  python3 - "$i" "$pt" "$pc" "$yt" "$yc" "$ot" "$oc" "$ps" "$ys" "$os" "$STREAMS" "$DUR" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import sys
i, pt, pc, yt, yc, ot, oc = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
ps, ys, os_, streams, dur, load = int(sys.argv[8]), int(sys.argv[9]), int(sys.argv[10]), int(sys.argv[11]), float(sys.argv[12]), sys.argv[13]
if pt == 0 or yt == 0:
    print(f"run {i}: a client streamed no tokens (pado {pt}, python {yt}); see the .out files")
    sys.exit(0)
p, y = pc / pt * 1000, yc / yt * 1000
per_stream = lambda t: t / streams / dur
print(f"run {i} (load {load}): pado {pt} tokens, {pc:.2f} CPU s = {p:.4f} CPU s per 1k tokens "
      f"({per_stream(pt):.1f} tokens/s per stream, {ps / pt * 1000:.0f} switches per 1k); "
      f"python {yt} tokens, {yc:.2f} CPU s = {y:.4f} per 1k ({per_stream(yt):.1f} tokens/s per stream, "
      f"{ys / yt * 1000:.0f} switches per 1k); pado/python = {p / y:.3f} "
      f"({'under' if p / y < 1 / 3 else 'NOT under'} a third)")
if ot > 0:
    o = oc / ot * 1000
    print(f"run {i}: old pado {ot} tokens, {oc:.2f} CPU s = {o:.4f} CPU s per 1k "
          f"({per_stream(ot):.1f} tokens/s per stream, {os_ / ot * 1000:.0f} switches per 1k); "
          f"old/python = {o / y:.3f}; new/old = {p / o:.3f}")
PY
done
echo "files: $OUT"
