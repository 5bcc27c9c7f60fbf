#!/usr/bin/env bash
# Workers on one PostgreSQL run: 1, 2 and 3 `budge worker` processes
# advance a detached run (the discovery deck repeated REPEATS times, default
# 20: 4,160 sessions) against `budge sim serve` with LATENCY (default
# 100ms) per call, each worker at concurrency 64. A call costs about 1 ms
# of CPU in all (the worker half of it, the simulator server and PostgreSQL
# the rest): three workers at 100 ms a call keep most of 2 cores busy, and
# LATENCY=1s shows how the claims scale when calls wait on the endpoint, as
# they do on a real provider. For each count: the calls the
# server logged, the span from the first call's arrival to the last one's
# answer, the calls per second over it and the speed-up over one worker;
# then the wall time from the first worker's start to the last one's exit,
# which adds what does not scale with workers: starting, and scoring the
# run at the end (the worker that scores it, and each other worker, which
# scores it again to print the same result). The PostgreSQL server is started in a
# temporary directory (Debian's postgresql package; as the postgres user
# when run as root).
#
#   bash bench/workers.sh                  # 4,160 sessions, 100 ms calls
#   LATENCY=1s bash bench/workers.sh 5     # 1,040 sessions, 1 s calls
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-20}
. bench/pg.sh

"$budge" sim serve --addr 127.0.0.1:0 --latency "${LATENCY:-100ms}" --request-log "$work/requests.jsonl" > "$work/serve.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$work/serve.out" && break; sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$work/serve.out")
sed "s/^repeats: 2\$/repeats: $repeats/" pressure/decks/discovery.yaml > "$work/deck.yaml"

# callspan reads request log lines and prints the number of calls, the
# seconds from the first call's arrival to the last call's answer, and the
# calls per second over that span.
callspan='
import sys, json, datetime
def at(s):
    s = s.rstrip("Z")
    head, _, frac = s.partition(".")
    return datetime.datetime.fromisoformat(head + "+00:00").timestamp() + float("0." + (frac or "0"))
first, last, n = None, None, 0
for line in sys.stdin:
    r = json.loads(line)
    t = at(r["time"])
    first = t if first is None else min(first, t)
    last = max(last or t, t + r["duration_ms"] / 1000)
    n += 1
print(n, f"{last - first:.3f}", f"{n / (last - first):.0f}")
'
base=""
for n in ${COUNTS:-1 2 3}; do
  id=$("$budge" run --store "$db" --model openai-compatible:sim --base-url "$url" --deck "$work/deck.yaml" --seed 7 \
    --concurrency 64 --detach 2>/dev/null | sed -n 's/^run: //p')
  before=$(wc -l < "$work/requests.jsonl")
  start=$(date +%s.%N)
  wp=()
  for k in $(seq "$n"); do
    "$budge" worker "$id" --store "$db" --concurrency 64 --quiet > "$work/worker-$n-$k.out" 2> "$work/worker-$n-$k.err" &
    wp+=($!)
  done
  for p in "${wp[@]}"; do
    if ! wait "$p"; then
      echo "a worker failed:" >&2
      cat "$work"/worker-"$n"-*.err >&2
      exit 1
    fi
  done
  end=$(date +%s.%N)
  read -r calls span rate < <(tail -n +$((before + 1)) "$work/requests.jsonl" | python3 -c "$callspan")
  [ -n "$base" ] || base=$rate
  python3 -c "print(f'$n worker(s): $calls calls in {$span:.1f} s, $rate calls/s, {$rate / $base:.2f}x one worker; {$end - $start:.1f} s from start to exit, {$calls / ($end - $start):.0f} calls/s')"
done
