#!/usr/bin/env bash
# The same 4,160-session run (the discovery deck repeated 20 times, seed 7)
# on each store backend: SQLite in a directory, and PostgreSQL on a server
# this script starts in a temporary directory (Debian's postgresql package;
# as the postgres user when run as root). For each: wall time, calls per
# second and peak RSS of `budge run` on the in-process simulator and against
# `budge sim serve` with 100 ms latency at concurrency 256, then of
# `budge report` and `budge export` of the run. The PostgreSQL server's own
# memory is not in the RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/pg.sh

"$budge" sim serve --addr 127.0.0.1:0 --latency 100ms > "$work/serve.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$work/serve.out" && break; sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$work/serve.out")
sed 's/^repeats: 2$/repeats: 20/' pressure/decks/discovery.yaml > "$work/discovery-x20.yaml"

# timed LABEL CMD...: wall seconds and peak RSS of one budge command.
timed() {
  local label=$1; shift
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f '%M' -o "$work/rss" "$@" > "$work/$label.out"
  end=$(date +%s.%N)
  python3 - "$work/$label.out" "$start" "$end" "$(tail -1 "$work/rss")" "$label" <<'PY'
import json, sys
path, start, end, rss, label = sys.argv[1:]
wall = float(end) - float(start)
line = f"{label}: {wall:.2f}s, peak RSS {int(rss)/1024:.0f} MB"
s = open(path).read()
if ' run ' in label:
    r = json.loads(s[s.index('{'):])['run']
    line += f", {r['sessions_complete']} sessions, {r['attempts']} calls: {r['attempts']/wall:.0f} calls/s"
print(line)
PY
}

for store in "sqlite:$work/runs" "postgres:$db"; do
  name=${store%%:*}
  loc=${store#*:}
  timed "$name run in process" "$budge" run --store "$loc" --deck "$work/discovery-x20.yaml" --seed 7 --quiet --format json
  timed "$name report" "$budge" report latest --store "$loc" --format json
  timed "$name export" "$budge" export latest --store "$loc"
  timed "$name run over HTTP (100 ms, c256)" "$budge" run --store "$loc" --model openai-compatible:sim --base-url "$url" \
    --deck "$work/discovery-x20.yaml" --seed 7 --concurrency 256 --quiet --format json
done
