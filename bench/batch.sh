#!/usr/bin/env bash
# Batch runs against budge sim serve: waves, wall time and peak RSS of
# `budge run --batch` for each size given (default 4160 100048 sessions:
# the discovery deck with its repeats raised, its cases copied past
# 208,000 sessions), through the OpenAI-style Batch API with a simulated
# completion delay (DELAY, default 2s). Every session of a size waits in
# the same wave (--concurrency is the size), so the peak RSS of a size is
# the memory of that many sessions waiting in a batch; MB/1k is that peak
# per thousand sessions. anon_MB and file_MB split the RSS sampled at its
# highest (every second, from /proc/PID/status): the process's own
# memory (Go heap and stacks, SQLite's caches) and file pages mapped into
# it (the binary, files read through mmap).
#
#   bash bench/batch.sh              # 4,160 and 100,048 sessions, 2 s delay
#   DELAY=1s bash bench/batch.sh 4160 100048 1000000
#   DELAY=5s bash bench/batch.sh 4160
#
# BUDGE_HEAPPROFILE=FILE (see cmd/budge/profile.go) leaves the heap profile
# of each run's highest live heap in FILE.N (N the size); BUDGE_CPUPROFILE=FILE
# the CPU profile of each run in FILE.N and of the simulator in FILE.sim.
source "$(dirname "$0")/lib.sh"
bench_cleanup() { kill -INT "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; }
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(4160 100048)
delay=${DELAY:-2s}
heap=${BUDGE_HEAPPROFILE:-}
cpu=${BUDGE_CPUPROFILE:-}
unset BUDGE_HEAPPROFILE BUDGE_CPUPROFILE
BUDGE_CPUPROFILE=${cpu:+$cpu.sim} "$budge" sim serve --addr 127.0.0.1:0 --batch-delay "$delay" > "$work/srv.out" 2>&1 &
srv=$!
for _ in $(seq 100); do
  url=$(sed -n 's/^listening on //p' "$work/srv.out")
  [ -n "$url" ] && break
  sleep 0.1
done
# sample PID: the RSS of PID at its highest so far, into
# $work/peak ("rss anon file" in kB), every second until PID ends.
sample() {
  local pid=$1 best=0 rss anon file
  echo "0 0 0" > "$work/peak"
  while kill -0 "$pid" 2>/dev/null; do
    read -r rss anon file < <(awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } END { print r + 0, a + 0, f + 0 }' "/proc/$pid/status" 2>/dev/null || echo "0 0 0")
    if [ "${rss:-0}" -gt "$best" ]; then
      best=$rss
      echo "$rss $anon $file" > "$work/peak"
    fi
    sleep 1
  done
}
printf '%-9s %6s %9s %9s %8s %8s %8s %8s\n' sessions waves requests seconds peak_MB MB/1k anon_MB file_MB
for n in "${sizes[@]}"; do
  deck=$work/discovery-$n.yaml
  discovery_deck "$n" "$deck"
  sessions=$(( 208 * copies * repeats ))
  dir=$work/store-$n
  [ -z "$heap" ] || export BUDGE_HEAPPROFILE=$heap.$sessions
  [ -z "$cpu" ] || export BUDGE_CPUPROFILE=$cpu.$sessions
  /usr/bin/time -f "%e %M" -o "$work/time" "$budge" run --dir "$dir" --deck "$deck" --model openai-compatible:sim \
    --base-url "$url" --batch --concurrency "$sessions" --seed 5 --format json > "$work/run.json" 2> "$work/run.err" &
  tpid=$!
  sleep 0.5
  sample "$(pgrep -P "$tpid" | head -1)" &
  spid=$!
  code=0
  wait "$tpid" || code=$?
  wait "$spid" || true
  [ $code -eq 0 ] || [ $code -eq 3 ] || { cat "$work/run.err" >&2; exit $code; }
  read -r secs kb < <(tail -1 "$work/time") # after time's "exited with non-zero status" line
  read -r _ anon file < "$work/peak"
  waves=$(grep -c '^batch: wave [0-9]*: [0-9]* request' "$work/run.err" || true)
  reqs=$(awk '/^batch: wave [0-9]*: [0-9]* request/ { s += $4 } END { print s + 0 }' "$work/run.err")
  printf '%-9s %6s %9s %9s %8.0f %8.2f %8.0f %8.0f\n' "$sessions" "$waves" "$reqs" "$secs" "$(echo "$kb/1024" | bc -l)" "$(echo "$kb/1024/($sessions/1000)" | bc -l)" \
    "$(echo "$anon/1024" | bc -l)" "$(echo "$file/1024" | bc -l)"
  [ -z "$heap" ] || grep '^heap profile' "$work/run.err" | tail -1
  rm -rf "$dir"
done
