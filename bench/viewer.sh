#!/usr/bin/env bash
# The viewer on a large run: builds a simulator run of about N sessions
# (default 41600; the discovery deck with its repeats raised, its cases
# copied past 208,000 sessions as bench/scale.sh does), starts `budge view`
# on it (it listens at once, "first page"; a run's page shows the sessions
# scored so far, "run page", while it scores the run once for the viewer,
# keeping the result in the store: timed as "index"), then times each page
# over HTTP, the median of REPEAT requests (default 5):
#   runs list, first page of the session table, the failures-only filter,
#   the page after it (key paging), a sort by final answer, a transcript
#   search, opening a session, opening a pair, the report page.
#
#   bash bench/viewer.sh            # 41,600 sessions
#   bash bench/viewer.sh 1000000    # the issue's million-session target
#   STORE=/tmp/big bash bench/viewer.sh 41600   # keep (or reuse) the store
source "$(dirname "$0")/lib.sh"
n=${1:-41600}
repeat=${REPEAT:-5}
pid=
bench_cleanup() { kill "$pid" 2>/dev/null || true; }
dir=${STORE:-$work/store}

deck=$work/discovery-$n.yaml
discovery_deck "$n" "$deck"

if ! "$budge" runs --dir "$dir" 2>/dev/null | awk 'NR == 2' | grep -q .; then
  start=$(date +%s.%N)
  "$budge" run --dir "$dir" --deck "$deck" --quiet --concurrency 16 > /dev/null || true
  printf 'run: %d sessions stored in %.1f s\n' "$(( 208 * copies * repeats ))" "$(echo "$(date +%s.%N) - $start" | bc)"
fi
run=$("$budge" runs --dir "$dir" | awk 'NR == 2 { print $1 }')

start=$(date +%s.%N)
start_view "$run" "$dir" 36000
curl -fsS -o /dev/null "$url/"
printf 'first page: budge view served the runs list %.1f s after it started\n' "$(echo "$(date +%s.%N) - $start" | bc)"
# While the run is scored for the viewer its page shows the sessions scored
# so far (id="partial"), or answers 503 with its progress before the first
# of them are written; then the whole run's table.
first_run_page=
while :; do
  code=$(curl -sS -o "$work/page" -w '%{http_code}' "$url/runs/$run/")
  kill -0 "$pid" 2>/dev/null || { cat "$work/view.err" >&2; exit 1; }
  if [ "$code" = 200 ] && [ -z "$first_run_page" ]; then
    first_run_page=1
    printf 'run page: the run'"'"'s table (%s) answered %.1f s after it started\n' \
      "$(sed -n 's/.*id="count">\([^<·]*\).*/\1/p' "$work/page" | head -1 | sed 's/ *$//')" "$(echo "$(date +%s.%N) - $start" | bc)"
  fi
  [ "$code" = 200 ] && ! grep -q 'id="partial"' "$work/page" && break
  sleep 1
done
printf 'index: the whole run'"'"'s table answered %.1f s after it started (scoring the run for the viewer when it was not yet)\n' \
  "$(echo "$(date +%s.%N) - $start" | bc)"
printf 'viewer peak RSS while scoring: %d MB\n' "$(( $(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status") / 1024 ))"

# time PATH: the median time of $repeat requests, in milliseconds.
time_ms() {
  for _ in $(seq "$repeat"); do
    curl -fsS -o /dev/null -w '%{time_total}\n' "$url$1"
  done | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f", 1000 * a[int((NR + 1) / 2)] }'
}
table=$(curl -fsS "$url/runs/$run/?failures=1")
next=$(printf '%s' "$table" | sed -n 's/.*<a href="\([^"]*\)" id="next">.*/\1/p' | head -1 | sed 's/&amp;/\&/g')
session=$(printf '%s' "$table" | sed -n 's/.*data-session="\([^"]*\)".*/\1/p' | head -1)
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
IFS=/ read -r c a o b r <<< "$session"
printf '%-34s %10s\n' page ms
for p in "runs-list|/" "table-first-page|/runs/$run/" "failures-only|/runs/$run/?failures=1" \
  "failures-next-page|/runs/$run/$next" "sort-by-final-answer|/runs/$run/?sort=final" \
  "sort-by-final-desc-unreviewed|/runs/$run/?sort=final_status&desc=1&unreviewed=1" \
  "discordant|/runs/$run/?discordant=1" "search-transcripts|/runs/$run/?q=$(enc 'not a phrase anyone wrote')" \
  "search-common-word|/runs/$run/?q=$(enc 'schedul')" \
  "open-session|/runs/$run/session?id=$(enc "$session")" "open-pair|/runs/$run/pair?key=$(enc "$c/$o/$b/$r")"; do
  printf '%-34s %10s\n' "${p%%|*}" "$(time_ms "${p#*|}")"
done
# The report scores the whole run on its first visit, then is kept.
printf '%-34s %10s\n' report-first-visit "$(repeat=1 time_ms "/runs/$run/report")"
printf '%-34s %10s\n' report-kept "$(time_ms "/runs/$run/report")"
printf 'viewer peak RSS: %d MB\n' "$(( $(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status") / 1024 ))"
