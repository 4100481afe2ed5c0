#!/usr/bin/env bash
# Fuzz pado's parsers of untrusted input for longer than `cargo test` does (10 s a
# target): builds the pado-fuzz binary once and runs each target for SECONDS, JOBS
# at a time, each in its own process. By default in the dev profile, whose
# dependencies `cargo test` has already built (then only pado-fuzz compiles);
# `--profile fuzz` (opt-level 1, no LTO: see Cargo.toml) builds them all again for
# more inputs a second. A failing input is saved under target/fuzz-crashes/ and printed with the
# command that replays it; the exit status is 1 when any target failed.
#
#   scripts/fuzz.sh                      every target, 60 s each
#   scripts/fuzz.sh -s 600 merge bundle  two targets, 10 minutes each
#   scripts/fuzz.sh --features fleet     only the fleet family (merge, live, bundle),
#                                        and only the crates it needs are built
#   scripts/fuzz.sh --profile fuzz -s 3600   an hour each, optimised
#   PADO_FUZZ_SEED=7 scripts/fuzz.sh     the same inputs again
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
jobs=$(nproc 2>/dev/null || echo 2)
profile=dev
features=()
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    -s|--seconds) seconds="$2"; shift 2 ;;
    -j|--jobs) jobs="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --features) features=(--no-default-features --features "$2"); shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
start=$(date +%s)
cargo build -p pado-fuzz --profile "$profile" --bin pado-fuzz ${features[@]+"${features[@]}"}
echo "built in $(( $(date +%s) - start )) s"
dir=$profile
[ "$profile" = dev ] && dir=debug
bin="${CARGO_TARGET_DIR:-target}/$dir/pado-fuzz"
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <("$bin" --list | awk '{print $1}')
fi
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
printf '%s\n' "${targets[@]}" |
  xargs -P "$jobs" -I{} sh -c '"$0" "$1" --seconds "$2" > "$3/$1.log" 2>&1; echo $? > "$3/$1.rc"' \
    "$bin" {} "$seconds" "$logs"
failed=0
for t in "${targets[@]}"; do
  cat "$logs/$t.log"
  [ "$(cat "$logs/$t.rc")" = 0 ] || failed=1
done
exit $failed
