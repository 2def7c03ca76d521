#!/usr/bin/env bash
# Starts `braid serve` on an ephemeral loopback port, drives it with `braid load`, then stops it
# with SIGTERM (a graceful drain) and checks it exited 0. With --soak, also samples the server's
# resident memory after a warm-up and at the end, and fails unless every request was answered 200
# or with the overload status and the RSS grew under 5%; without it, unless every request sent was
# answered 200.
#
#   scripts/serve_demo.sh BUILD MODELS PATTERN SECONDS [--soak] [serve flags...]
#   scripts/serve_demo.sh build squeezenet,googlenet squeezenet:40,googlenet:20 5
#
# LOAD_FLAGS: more flags for braid load (e.g. --concurrency 48).
set -euo pipefail
build=$1 models=$2 pattern=$3 seconds=$4
shift 4
soak=0
if [[ ${1:-} == --soak ]]; then soak=1; shift; fi
braid=$build/braid
log=$(mktemp)
report=$(mktemp --suffix=.json)
trap 'kill $pid 2>/dev/null || true; rm -f "$log" "$report"' EXIT

"$braid" serve --models "$models" --port 0 --grpc-port 0 "$@" >"$log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  grep -q "listening on" "$log" && break
  kill -0 $pid 2>/dev/null || { cat "$log"; echo "serve_demo: braid serve exited" >&2; exit 1; }
  sleep 0.2
done
cat "$log"
url=$(grep -o "http://[0-9.]*:[0-9]*" "$log" | head -1 | sed 's|http://||')
rss() { awk '/VmRSS/ {print $2}' /proc/$pid/status; }

if ((soak)); then
  # Warm-up; overload answers are expected under --soak (braid load then exits 1): judged below.
  "$braid" load "$url" --pattern "$pattern" --duration 10 ${LOAD_FLAGS:-} >/dev/null || true
  rss_start=$(rss)
fi
load_status=0
"$braid" load "$url" --pattern "$pattern" --duration "$seconds" --json "$report" ${LOAD_FLAGS:-} ||
  load_status=$?
if ((soak)); then rss_end=$(rss); fi
kill -TERM $pid
status=0
wait $pid || status=$?
tail -2 "$log"
[[ $status -eq 0 ]] || { echo "serve_demo: braid serve exited $status" >&2; exit 1; }
# Without --soak every request must be answered 200 (braid load exits 1 when one was not).
((soak)) || [[ $load_status -eq 0 ]] || {
  echo "serve_demo: braid load exited $load_status" >&2
  exit 1
}

if ((soak)); then
  python3 - "$report" "$rss_start" "$rss_end" <<'PY'
import json, sys
report, start, end = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
bad = {m["name"]: m["errors"] for m in report["models"]
       if any(k not in ("503", "429") for k in m["errors"])}
sent = sum(m["sent"] for m in report["models"])
answered = sum(m["ok"] + sum(m["errors"].values()) for m in report["models"])
growth = (end - start) / start
print(f"soak: {sent} requests, {sum(m['ok'] for m in report['models'])} answered 200, "
      f"RSS {start} -> {end} kB ({100 * growth:+.1f}%)")
ok = not bad and answered == sent and growth < 0.05
if bad: print("soak: errors other than the overload status:", bad)
sys.exit(0 if ok else 1)
PY
fi
