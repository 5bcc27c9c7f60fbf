#!/usr/bin/env bash
# Memory and time against the number of sessions. The discovery deck (416
# sessions) with its repeats raised so the run has about N sessions, for each
# N given (default 4160 41600), on the in-process simulator and SQLite. For
# each size: wall time and peak RSS of `budge run`, `budge report` and
# `budge export`, then, against the smallest size, the ratio of time to a
# linear extrapolation and of peak RSS (flat memory is a ratio near 1).
#
#   bash bench/scale.sh                # 4,160 and 41,600 sessions
#   bash bench/scale.sh 4160 1000000   # the issue's million-session target
#
# A deck repeats at most 1,000 times (208,000 sessions of the discovery
# deck); a larger N copies the deck's cases under new ids (c1-..., with
# their record and profile ids renamed) as often as it takes.
#   BUDGE=/tmp/old/budge bash bench/scale.sh   # measure another build
#   COMMANDS="run report" bash bench/scale.sh  # only some of the commands
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
budge=${BUDGE:-}
if [ -z "$budge" ]; then
  go build -o "$out/budge" ./cmd/budge
  budge=$PWD/$out/budge
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(4160 41600)

# measure LABEL CMD...: prints "seconds rss_kb" of one command.
measure() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null
  cat "$work/time"
}

# view DIR PATH: starts `budge view` on a free port, fetches PATH (with
# RUN standing for the run's id) and prints "seconds rss_kb": the time to
# serve the page and the server's peak RSS once it has.
view() {
  local dir=$1 path=$2 pid url run t
  run=$("$budge" runs --dir "$dir" | awk 'NR == 2 { print $1 }')
  "$budge" view "$run" --dir "$dir" --addr 127.0.0.1:0 > "$work/view.out" 2>&1 &
  pid=$!
  # The first start on a store builds its browse indexes before it
  # listens: minutes for a million sessions.
  for _ in $(seq 6000); do
    url=$(sed -n 's/^viewer: //p' "$work/view.out")
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/view.out" >&2; return 1; }
    sleep 0.1
  done
  url=${url%/}
  path=${path//RUN/$run}
  t=$(curl -fsS -o /dev/null -w '%{time_total}' "$url$path")
  awk -v t="$t" '/^VmHWM:/ { print t, $2 }' "/proc/$pid/status"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

printf '%-10s %-11s %10s %10s\n' sessions command seconds peak_MB
declare -A base_t base_m
first=""
for n in "${sizes[@]}"; do
  copies=$(( (n + 207999) / 208000 ))
  repeats=$(( n / (208 * copies) > 0 ? n / (208 * copies) : 1 ))
  deck=$work/discovery-$n.yaml
  sed "s/^repeats: 2\$/repeats: $repeats/" pressure/decks/discovery.yaml > "$deck"
  case=robotics-arm
  if [ "$copies" -gt 1 ]; then
    sed -n '1,/^cases:$/p' "$deck" > "$deck.tmp"
    for k in $(seq "$copies"); do
      sed -n '/^cases:$/,$p' pressure/decks/discovery.yaml | tail -n +2 |
        sed "s/^  - id: /  - id: c$k-/; s/AV-/AV-$k/g; s/VOL-/VOL-$k/g" >> "$deck.tmp"
    done
    mv "$deck.tmp" "$deck"
    case=c1-robotics-arm
  fi
  dir=$work/store-$n
  sessions=$(( 208 * copies * repeats ))
  for cmd in ${COMMANDS:-run report export view view-report}; do
    case $cmd in
      run) read -r t m < <(measure "$budge" run --dir "$dir" --deck "$deck" --quiet --concurrency 16) ;;
      report) read -r t m < <(measure "$budge" report latest --dir "$dir") ;;
      export) read -r t m < <(measure "$budge" export latest --dir "$dir") ;;
      view) read -r t m < <(view "$dir" "/runs/RUN/session?id=$case/I/P-first/authority/r1") ;;
      view-report) read -r t m < <(view "$dir" "/runs/RUN/report") ;;
    esac
    printf '%-10s %-11s %10.2f %10.0f\n' "$sessions" "$cmd" "$t" "$((m / 1024))"
    if [ -z "$first" ] || [ "$first" = "$sessions" ]; then
      base_t[$cmd]=$t; base_m[$cmd]=$m
    else
      awk -v t="$t" -v m="$m" -v bt="${base_t[$cmd]}" -v bm="${base_m[$cmd]}" -v n="$sessions" -v bn="$first" -v c="$cmd" \
        'BEGIN { printf "  %s: time %.2fx linear extrapolation from %d sessions; peak RSS %.2fx\n", c, t / (bt * n / bn), bn, m / bm }'
    fi
  done
  [ -n "$first" ] || first=$sessions
  rm -rf "$dir"
done
