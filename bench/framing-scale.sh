#!/usr/bin/env bash
# Memory and time of framing runs against the number of sessions. For each
# N given (default 4000 40000), a generated item file of N/4 questions in
# nine domains (budge's item JSONL), run under the default design (four
# sessions an item) on the in-process simulator and SQLite. For each size:
# wall time, CPU time (user + system) and peak RSS of `budge framing run`,
# `budge report`, `budge export` (jsonl) and `budge export --format flips`,
# then, against the smallest size, the ratio of CPU time to a linear
# extrapolation (on a shared machine wall time measures the neighbours) and
# of peak RSS (flat memory is a ratio near 1; what may grow is the items
# themselves and a few bytes of tallies an item and arm).
#
#   bash bench/framing-scale.sh                 # 4,000 and 40,000 sessions
#   bash bench/framing-scale.sh 4000 400000     # a larger run
#   ITEMS=1000 bash bench/framing-scale.sh      # the same sizes on 1,000 items
#
# With ITEMS set, the items stay ITEMS and the design grows instead: speaker
# label sets are added (speakers, then P2/Q2, P3/Q3, ...) until an item has
# about N/ITEMS sessions (two C1, two C2 a label set), so memory that grows
# with the items or the arms is told apart from memory that grows with the
# sessions.
#   BUDGE=/tmp/old/budge bash bench/framing-scale.sh   # another build
#   COMMANDS="run report" bash bench/framing-scale.sh  # some commands only
source "$(dirname "$0")/lib.sh"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(4000 40000)

# items N FILE: writes N generated questions, spread over nine domains.
items() {
  awk -v n="$1" 'BEGIN {
    for (i = 0; i < n; i++) {
      printf "{\"id\": \"gen-%07d\", \"domain\": \"domain-%d\", \"question\": \"In generated question %d, which of two numbers is %d plus %d?\", \"correct\": \"%d\", \"incorrect\": \"%d\"}\n",
        i, i % 9, i, i, i % 97, i + i % 97, i + i % 97 + 1
    }
  }' > "$2"
}

printf '%-10s %-8s %10s %10s %10s\n' sessions command seconds cpu_s peak_MB
for n in "${sizes[@]}"; do
  labels=()
  if [ -n "${ITEMS:-}" ]; then
    k=$ITEMS
    l=$(( n / (2 * k) - 1 > 1 ? n / (2 * k) - 1 : 1 ))
    labels=(--labels speakers)
    for j in $(seq 2 "$l"); do labels+=(--labels "P$j/Q$j"); done
    sessions=$(( k * (2 + 2 * l) ))
  else
    k=$(( n / 4 > 0 ? n / 4 : 1 ))
    sessions=$(( 4 * k ))
  fi
  data=$work/items-$k.jsonl
  [ -f "$data" ] || items "$k" "$data"
  dir=$work/store-$n
  for cmd in ${COMMANDS:-run report export flips}; do
    case $cmd in
      run) read -r w m t < <(measure "$budge" framing run --dir "$dir" --data "$data" "${labels[@]}" --quiet --concurrency 16) ;;
      report) read -r w m t < <(measure "$budge" report latest --dir "$dir") ;;
      export) read -r w m t < <(measure "$budge" export latest --dir "$dir") ;;
      flips) read -r w m t < <(measure "$budge" export latest --dir "$dir" --format flips) ;;
    esac
    printf '%-10s %-8s %10.2f %10.2f %10.0f\n' "$sessions" "$cmd" "$w" "$t" "$((m / 1024))"
    ratio "CPU time" "$cmd" "$t" "$m" "$sessions"
  done
  ratio_next "$sessions"
  rm -rf "$dir"
done
