#!/usr/bin/env bash
# Batch runs against budge sim serve: waves, wall time and peak RSS of
# `budge run --batch` for each size given (default 4160 100048 sessions:
# the discovery deck with its repeats raised), through the OpenAI-style
# Batch API with a simulated completion delay (DELAY, default 2s). Every
# session of a size waits in the same wave, so the peak RSS of the largest
# size is the memory of that many sessions waiting in a batch.
#
#   bash bench/batch.sh              # 4,160 and 100,048 sessions, 2 s delay
#   DELAY=5s bash bench/batch.sh 4160
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
go build -o "$out/budge" ./cmd/budge
budge=$PWD/$out/budge
work=$(mktemp -d)
trap 'kill $srv 2>/dev/null || true; rm -rf "$work"' EXIT
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(4160 100048)
delay=${DELAY:-2s}
"$budge" sim serve --addr 127.0.0.1:0 --batch-delay "$delay" > "$work/srv.out" 2>&1 &
srv=$!
for _ in $(seq 100); do
  url=$(sed -n 's/^listening on //p' "$work/srv.out")
  [ -n "$url" ] && break
  sleep 0.1
done
printf '%-9s %6s %9s %9s %8s %8s\n' sessions waves requests seconds peak_MB MB/1k
for n in "${sizes[@]}"; do
  repeats=$(( n / 208 > 0 ? n / 208 : 1 ))
  deck=$work/discovery-$n.yaml
  sed "s/^repeats: 2\$/repeats: $repeats/" pressure/decks/discovery.yaml > "$deck"
  dir=$work/store-$n
  /usr/bin/time -f "%e %M" -o "$work/time" "$budge" run --dir "$dir" --deck "$deck" --model openai-compatible:sim \
    --base-url "$url" --batch --seed 5 --format json > "$work/run.json" 2> "$work/run.err" || {
    code=$?
    [ $code -eq 3 ] || { cat "$work/run.err" >&2; exit $code; }
  }
  read -r secs kb < "$work/time"
  waves=$(grep -c '^batch: wave [0-9]*: [0-9]* request' "$work/run.err" || true)
  reqs=$(awk '/^batch: wave [0-9]*: [0-9]* request/ { s += $4 } END { print s + 0 }' "$work/run.err")
  sessions=$(( 208 * repeats ))
  printf '%-9s %6s %9s %9s %8.0f %8.2f\n' "$sessions" "$waves" "$reqs" "$secs" "$(echo "$kb/1024" | bc -l)" "$(echo "$kb/1024/($sessions/1000)" | bc -l)"
done
