# Shared by the bench scripts (sourced, not run): the prologue every one of
# them needs and the measurement and ratio code the scaling benches share.
# Sourcing it moves to the repository root, builds budge into bench/out
# (unless BUDGE names another build), makes a temporary directory $work
# removed on exit (after bench_cleanup, if the script defines one).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=bench/out
mkdir -p "$out"
budge=${BUDGE:-}
if [ -z "$budge" ]; then
  go build -o "$out/budge" ./cmd/budge
  budge=$PWD/$out/budge
fi
work=$(mktemp -d)
trap 'if declare -F bench_cleanup > /dev/null; then bench_cleanup; fi; rm -rf "$work"' EXIT

# measure CMD...: prints "wall_seconds rss_kb cpu_seconds" of one command
# (its peak RSS and user + system CPU time, from /usr/bin/time).
measure() {
  /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$@" > /dev/null
  awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$work/time"
}

# discovery_deck N FILE: writes the discovery deck with its repeats raised so
# the run has about N sessions; past 208,000 sessions (a deck repeats at most
# 1,000 times) its cases are copied under new ids (c1-..., with their record
# and profile ids renamed). Sets copies, repeats and case (the first case's
# id) for the caller.
discovery_deck() {
  local n=$1 deck=$2 k
  copies=$(( (n + 207999) / 208000 ))
  repeats=$(( n / (208 * copies) > 0 ? n / (208 * copies) : 1 ))
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
}

# start_view RUN DIR TRIES: starts `budge view` on run RUN of the store DIR
# on a free port and waits until it listens, TRIES tenths of a second at
# most (it listens at once; a run's page answers "being scored" until the
# run's index is built: minutes for a million sessions on a first start). Sets pid and url (without its
# final slash); fails, showing the viewer's errors, if it exits first.
start_view() {
  "$budge" view "$1" --dir "$2" --addr 127.0.0.1:0 > "$work/view.out" 2> "$work/view.err" &
  pid=$!
  url=
  for _ in $(seq "$3"); do
    url=$(sed -n 's/^viewer: //p' "$work/view.out")
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/view.err" >&2; return 1; }
    sleep 0.1
  done
  url=${url%/}
}

# ratio WHAT CMD T RSS SESSIONS: against the first size measured, prints the
# ratio of T (WHAT: "time", "CPU time") to a linear extrapolation and of the
# peak RSS; at the first size, keeps CMD's numbers as the base. Call
# ratio_next once a size's commands are done.
declare -A base_t base_m
first=""
ratio() {
  local what=$1 cmd=$2 t=$3 m=$4 sessions=$5
  if [ -z "$first" ] || [ "$first" = "$sessions" ]; then
    base_t[$cmd]=$t; base_m[$cmd]=$m
  else
    awk -v t="$t" -v m="$m" -v bt="${base_t[$cmd]}" -v bm="${base_m[$cmd]}" -v n="$sessions" -v bn="$first" -v c="$cmd" -v what="$what" \
      'BEGIN { printf "  %s: %s %.2fx linear extrapolation from %d sessions; peak RSS %.2fx\n", c, what, t / (bt * n / bn), bn, m / bm }'
  fi
}
ratio_next() { [ -n "$first" ] || first=$1; }
