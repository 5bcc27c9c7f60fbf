#!/usr/bin/env bash
# Workers on one PostgreSQL run: 1, 2 and 3 `budge worker` processes
# advance a detached run (the discovery deck repeated REPEATS times, default
# 20: 4,160 sessions) against `budge sim serve` with LATENCY (default
# 100ms) per call, each worker at concurrency 64. Each worker process needs
# about 1 ms of CPU per call, and the simulator server half that: on a
# machine with few cores the workers share the CPU and scale only until it
# is full, so LATENCY=1s shows how the claims scale when calls wait on the
# endpoint, as they do on a real provider. For each count: wall time from the first worker's
# start to the last one's exit, calls per second (the server's request log),
# and the speed-up over one worker. The PostgreSQL server is started in a
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
  calls=$(( $(wc -l < "$work/requests.jsonl") - before ))
  rate=$(python3 -c "print(f'{$calls / ($end - $start):.0f}')")
  [ -n "$base" ] || base=$rate
  python3 -c "print(f'$n worker(s): {$end - $start:.1f} s, $calls calls, $rate calls/s, {$rate / $base:.2f}x one worker')"
done
