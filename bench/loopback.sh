#!/usr/bin/env bash
# Loopback HTTP benchmarks of budge's network path against `budge sim serve`,
# each side in its own process, as a user would run them. Prints ratios.
#   1. 100 ms injected latency, concurrency 256: calls per second of a whole
#      run (the discovery deck repeated 20 times: 4,160 sessions) against the
#      ideal 256 / 0.1 s = 2,560 calls/s.
#   2. zero latency, the 416-session discovery deck at concurrency 32: calls
#      and sessions per second, and the peak RSS of `budge run`; the same
#      deck on the in-process simulator for comparison.
#   3. zero latency, `budge framing run` on the built-in sample crossed with
#      six speaker-label sets (1,296 sessions) at concurrency 64 against the
#      simulated judge behind `budge sim serve`, and the same run in process.
# Also: go test ./study -run XXX -bench Loopback -benchtime 1x
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
go build -o "$out/budge" ./cmd/budge
budge=$PWD/$out/budge
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

serve() { # serve LATENCY -> sets url
  "$budge" sim serve --addr 127.0.0.1:0 --latency "$1" > "$work/serve.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$work/serve.out" && break; sleep 0.05; done
  url=$(sed -n 's/^listening on //p' "$work/serve.out")
}

# run LABEL ARGS...: prints wall seconds, calls, sessions, peak RSS (MB) of
# `budge $cmd` (run, or framing run)
cmd=run
run() {
  local label=$1; shift
  local start end
  start=$(date +%s.%N)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M' -o "$work/rss" "$budge" $cmd --dir "$work/runs" --quiet --format json "$@" > "$work/$label.json" || true
  else
    "$budge" $cmd --dir "$work/runs" --quiet --format json "$@" > "$work/$label.json" || true
    echo 0 > "$work/rss"
  fi
  end=$(date +%s.%N)
  python3 - "$work/$label.json" "$start" "$end" "$(tail -1 "$work/rss")" "$label" <<'PY'
import json, sys
path, start, end, rss, label = sys.argv[1:]
s = open(path).read(); r = json.loads(s[s.index('{'):])['run']
wall = float(end) - float(start)
print(f"{label}: {r['sessions_complete']} sessions, {r['attempts']} calls in {wall:.2f}s: "
      f"{r['attempts']/wall:.0f} calls/s, {r['sessions_complete']/wall:.0f} sessions/s, peak RSS {int(rss)/1024:.0f} MB")
open(path + '.rate', 'w').write(str(r['attempts'] / wall))
PY
}

sed 's/^repeats: 2$/repeats: 20/' pressure/decks/discovery.yaml > "$work/discovery-x20.yaml"
serve 100ms
run latency100-c256 --model openai-compatible:sim --base-url "$url" --deck "$work/discovery-x20.yaml" --concurrency 256
python3 -c "r=float(open('$work/latency100-c256.json.rate').read()); print(f'  ratio to ideal (2560 calls/s): {r/2560:.3f}')"
kill "${pids[-1]}"

serve 0s
run latency0-c32 --model openai-compatible:sim --base-url "$url" --concurrency 32
run inprocess-c32 --concurrency 32

cmd="framing run"
labels=(--labels speakers,ab,qa,john-jane,llm-user,ai-agents)
run framing-http-c64 --data sample "${labels[@]}" --model openai-compatible:judge --base-url "$url" --concurrency 64
run framing-inprocess-c64 --data sample "${labels[@]}" --concurrency 64
python3 -c "h=float(open('$work/framing-http-c64.json.rate').read()); i=float(open('$work/framing-inprocess-c64.json.rate').read()); print(f'  framing over HTTP / in process: {h/i:.3f}')"
