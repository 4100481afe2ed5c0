#!/usr/bin/env bash
# Time `pado merge` on sixteen synthetic one-hour segment directories (issue 15's
# target: under 5 s and under 200 MB), with /usr/bin/time -v. Not a timed test:
# it prints the numbers against the targets and exits 0 either way (1 on failure to
# run).
#
#   bash bench/merge.sh                       # 16 segments × 3600 s, release build
#   SEGMENTS=4 SECONDS_PER=600 bash bench/merge.sh   # smaller, quicker
#
# Knobs: SEGMENTS (16), SECONDS_PER (3600), REQ (requests per step and second per
# generator, 150; four steps), OUT (/tmp/pado-bench-merge; the segments are kept
# there and reused when they exist with the same shape), PADO (binary; default
# target/release/pado, built when missing; a stale one is used as it is: pass
# PADO=target/profiling/pado after `cargo build --profile profiling -p pado`, or
# rebuild), KEEP_MERGED (0), SEGS (an existing directory of segment directories
# `seg*` to merge instead, e.g. ones written by an older pado).
#
# Segments are written by the current pado (plain V2 histograms since the merge speed
# work; older pado wrote V2 deflate, slower to read). Last measured (bench/README.md):
# 4.0-4.8 s wall and 6.4-6.9 s of user CPU on the 2-core development machine, 36-37 MB
# max RSS.
set -euo pipefail
# Bench runs stay out of the user's run history (pado history).
export PADO_HOME="${TMPDIR:-/tmp}/pado-bench-history"
cd "$(dirname "$0")/.."
SEGMENTS=${SEGMENTS:-16}
SECONDS_PER=${SECONDS_PER:-3600}
REQ=${REQ:-150}
OUT=${OUT:-/tmp/pado-bench-merge}
PADO=${PADO:-target/release/pado}
export CARGO_INCREMENTAL=0

[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
if [ ! -x "$PADO" ]; then
  cargo build --release -p pado
fi
cargo build --release -p pado-results --example synth_segments
GEN=target/release/examples/synth_segments

# "plain": written by a pado that writes plain V2 histograms (segments written before,
# V2 deflate, are another directory). SEGS=DIR merges existing segment directories,
# never written or removed here.
if [ -n "${SEGS:-}" ]; then
  [ -d "$SEGS" ] || { echo "SEGS=$SEGS: no such directory" >&2; exit 1; }
else
  SEGS="$OUT/segments-plain-$SEGMENTS-$SECONDS_PER-$REQ"
fi
if [ ! -f "$SEGS/.complete" ] && [ "$SEGS" = "$OUT/segments-plain-$SEGMENTS-$SECONDS_PER-$REQ" ]; then
  rm -rf "$SEGS"
  mkdir -p "$SEGS"
  echo "writing $SEGMENTS segments of $SECONDS_PER s into $SEGS ..."
  "$GEN" "$SEGS" "$SEGMENTS" "$SECONDS_PER" "$REQ"
  touch "$SEGS/.complete"
fi
du -sh "$SEGS" | awk '{print "segments on disk: " $1}'

MERGED="$OUT/merged"
rm -rf "$MERGED"
set +e
/usr/bin/time -v "$PADO" merge "$SEGS"/seg* --out "$MERGED" --quiet 2> "$OUT/merge.time"
code=$?
set -e
echo "pado merge exit code: $code (99 = the merged data failed the synthetic threshold p(95) < 100)"
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$OUT/merge.time")
rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/merge.time")
secs=$(python3 -c "
p='$wall'.split(':'); s=0
for x in p: s=s*60+float(x)
print(f'{s:.2f}')")
rss_mb=$((rss_kb / 1024))
echo "merge of $SEGMENTS × $SECONDS_PER s: wall ${secs} s (target < 5 s), max RSS ${rss_mb} MB (target < 200 MB)"
grep -E "User time|System time|Percent of CPU" "$OUT/merge.time" | sed 's/^\s*/  /'
[ "$code" = 0 ] || [ "$code" = 99 ] || { cat "$OUT/merge.time"; exit 1; }
[ "${KEEP_MERGED:-0}" = 1 ] || rm -rf "$MERGED"
