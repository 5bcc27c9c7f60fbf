#!/usr/bin/env bash
# Whole-run throughput of `budge run` against `budge sim serve` (separate
# processes, as a user runs them): 100 ms injected latency, concurrency 256,
# the discovery deck repeated 20 times (4,160 sessions, about 12,300 calls).
# The ideal is 256 / 0.1 s = 2,560 calls/s; start, scoring and the ramp
# are inside the measured wall time. With BASE=REV (a commit, branch or
# tag) the same run is made with a build of REV too, the two alternated in
# one invocation so both see the same machine, and the ratios printed.
#   bash bench/throughput.sh                  # this checkout, 3 rounds
#   BASE=24c9cf4 ROUNDS=5 bash bench/throughput.sh
#   BUDGE=b/budge BASE=24c9cf4 BASE_BUDGE=b/budge-24c9cf4 bash bench/throughput.sh  # builds made beforehand
source "$(dirname "$0")/lib.sh"
rounds=${ROUNDS:-3}
bins=("$budge")
names=(this)
if [ -n "${BASE:-}" ]; then
  if [ -n "${BASE_BUDGE:-}" ]; then
    cp "$BASE_BUDGE" "$work/budge-base" # a build of BASE made beforehand
  else
    git worktree add -q --detach "$work/base" "$BASE"
    (cd "$work/base" && go build -o "$work/budge-base" ./cmd/budge)
    git worktree remove --force "$work/base"
  fi
  bins+=("$work/budge-base")
  names+=("$BASE")
fi
"$budge" sim serve --addr 127.0.0.1:0 --latency 100ms > "$work/serve.out" 2>&1 &
srv=$!
bench_cleanup() { kill "$srv" 2>/dev/null || true; }
for _ in $(seq 100); do grep -q listening "$work/serve.out" && break; sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$work/serve.out")
sed 's/^repeats: 2$/repeats: 20/' pressure/decks/discovery.yaml > "$work/deck.yaml"

printf '%-10s %5s %7s %9s %7s %8s %8s\n' build round calls seconds calls/s ideal peak_MB
for r in $(seq "$rounds"); do
  for i in "${!bins[@]}"; do
    rm -rf "$work/runs"
    /usr/bin/time -f "%e %M %U %S" -o "$work/time" "${bins[$i]}" run --dir "$work/runs" --quiet --format json \
      --model openai-compatible:sim --base-url "$url" --deck "$work/deck.yaml" --concurrency 256 --seed "$r" > "$work/out.json"
    read -r secs kb cpu < <(awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$work/time")
    calls=$(python3 -c 'import json,sys; s=open(sys.argv[1]).read(); print(json.loads(s[s.index("{"):])["run"]["attempts"])' "$work/out.json")
    echo "${names[$i]} $r $calls $secs $kb $cpu" >> "$work/rows"
    awk -v n="${names[$i]}" -v r="$r" -v c="$calls" -v s="$secs" -v kb="$kb" -v cpu="$cpu" \
      'BEGIN { printf "%-10s %5d %7d %9.2f %7.0f %8.3f %8.0f  (CPU %.2f s, %.3f ms/call)\n", n, r, c, s, c / s, c / s / 2560, kb / 1024, cpu, (c > 0 ? cpu * 1000 / c : 0) }'
  done
done
python3 - "$work/rows" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for name, r, calls, secs, kb, cpu in rows:
    by.setdefault(name, []).append((int(calls) / float(secs), int(kb) / 1024, float(cpu) * 1000 / max(int(calls), 1)))
med = {n: tuple(statistics.median(x[i] for x in v) for i in range(3)) for n, v in by.items()}
for n, (rate, mb, ms) in med.items():
    print(f"median {n}: {rate:.0f} calls/s = {rate / 2560:.3f} of ideal, peak RSS {mb:.0f} MB, {ms:.3f} ms CPU/call")
names = list(med)
if len(names) == 2:
    a, b = med[names[0]], med[names[1]]
    print(f"this / {names[1]}: calls/s {a[0] / b[0]:.2f}x, peak RSS {a[1] / b[1]:.2f}x, CPU per call {a[2] / b[2]:.2f}x")
PY
