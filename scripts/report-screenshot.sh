#!/usr/bin/env bash
# Screenshot a pado HTML report with headless Chromium, to look at the charts.
#
#   scripts/report-screenshot.sh RESULT_DIR [OUT.png] [WIDTHxHEIGHT]
#
# RESULT_DIR must contain report.html. OUT defaults to RESULT_DIR/report.png and the
# window to 1400x3000. Installs Chromium with apt-get when it is missing. Also prints
# the browser's console errors (JavaScript errors in the report), if any, and exits
# non-zero when there were some.
set -euo pipefail

dir=${1:?usage: $0 RESULT_DIR [OUT.png] [WIDTHxHEIGHT]}
html="$(cd "$dir" && pwd)/report.html"
out=${2:-$dir/report.png}
size=${3:-1400x3000}
[[ -f $html ]] || { echo "no report.html in $dir" >&2; exit 2; }

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [[ -z $browser ]]; then
  echo "installing chromium..." >&2
  if [[ $(id -u) -ne 0 ]]; then sudo=sudo; else sudo=""; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
  browser=chromium
fi

profile=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$profile" "$log"' EXIT
out_abs="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"

"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --enable-logging=stderr --v=0 \
  --user-data-dir="$profile" --screenshot="$out_abs" --window-size="${size/x/,}" \
  "file://$html" 2>"$log" >/dev/null || true

[[ -s $out_abs ]] || { cat "$log" >&2; echo "no screenshot written" >&2; exit 1; }
echo "$out_abs"
if grep -E 'CONSOLE|Uncaught' "$log" >&2; then
  echo "console messages above came from the report" >&2
  exit 1
fi
