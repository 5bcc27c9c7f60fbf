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
#   KEEP=/work/big bash bench/scale.sh 1000000  # keep the largest store there
#                                               # (for bench/viewer.sh: STORE=)
#   REUSE=/work/big bash bench/scale.sh 41600 1000000
#       # the largest size's run is the one already in /work/big: its
#       # `run` line is skipped, the other commands read it (and it is kept)
# Time is compared with the extrapolation twice: wall time, and CPU time
# (user + system), which other work on the machine does not inflate.
source "$(dirname "$0")/lib.sh"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(4160 41600)

# view DIR PATH: starts `budge view` on a free port, asks for PATH (with
# RUN standing for the run's id) until it is served (a page that needs the
# run's index answers 503 while the viewer scores the run in the
# background) and prints "seconds rss_kb": the time from the viewer's start
# to the page, and the server's peak RSS once it has served it.
view() {
  local dir=$1 path=$2 run t0 code
  run=$("$budge" runs --dir "$dir" | awk 'NR == 2 { print $1 }')
  t0=$(date +%s.%N)
  start_view "$run" "$dir" 36000
  path=${path//RUN/$run}
  while :; do
    code=$(curl -sS -o /dev/null -w '%{http_code}' "$url$path")
    [ "$code" = 200 ] && break
    [ "$code" = 503 ] || { echo "view: $path answered $code" >&2; kill "$pid"; return 1; }
    sleep 0.5
  done
  awk -v t0="$t0" -v t1="$(date +%s.%N)" '/^VmHWM:/ { print t1 - t0, $2 }' "/proc/$pid/status"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

printf '%-10s %-11s %10s %10s %10s\n' sessions command seconds cpu_s peak_MB
for n in "${sizes[@]}"; do
  deck=$work/discovery-$n.yaml
  discovery_deck "$n" "$deck"
  dir=$work/store-$n
  sessions=$(( 208 * copies * repeats ))
  reuse=
  if [ -n "${REUSE:-}" ] && [ "$n" = "${sizes[-1]}" ]; then
    dir=$REUSE reuse=1
  fi
  for cmd in ${COMMANDS:-run report export view view-report}; do
    if [ -n "$reuse" ] && [ "$cmd" = run ]; then
      printf '%-10s %-11s %10s\n' "$sessions" run "(reused: $REUSE)"
      continue
    fi
    case $cmd in
      run) read -r t m c < <(measure "$budge" run --dir "$dir" --deck "$deck" --quiet --concurrency 16) ;;
      report) read -r t m c < <(measure "$budge" report latest --dir "$dir") ;;
      export) read -r t m c < <(measure "$budge" export latest --dir "$dir") ;;
      view) c=0; read -r t m < <(view "$dir" "/runs/RUN/session?id=$case/I/P-first/authority/r1") ;;
      view-report) c=0; read -r t m < <(view "$dir" "/runs/RUN/report") ;;
    esac
    printf '%-10s %-11s %10.2f %10.2f %10.0f\n' "$sessions" "$cmd" "$t" "$c" "$((m / 1024))"
    ratio time "$cmd" "$t" "$m" "$sessions"
    [ "$c" = 0 ] || ratio "CPU time" "$cmd-cpu" "$c" "$m" "$sessions"
  done
  ratio_next "$sessions"
  if [ -n "$reuse" ]; then
    :
  elif [ -n "${KEEP:-}" ] && [ "$n" = "${sizes[-1]}" ]; then
    rm -rf "$KEEP"; mv "$dir" "$KEEP"; echo "store kept in $KEEP"
  else
    rm -rf "$dir"
  fi
done
