#!/usr/bin/env bash
# A/B of cumulus binaries on one job: the binaries run in turn, `repeats` rounds, each run in a
# fresh run directory; prints, per binary, the mean and least of a timer from cumulus.log (the
# "where the time went" table, rank 0) and of the run's user CPU time. Runs of the same code move
# by +-15 % on a shared machine: in-turn rounds and the least of several are what compare.
# Not a benchmark against a ceiling: it compares builds of cumulus with each other (docs/md.md's
# "Speed" paragraphs).
#
#   bench/ab_timers.sh JOB.toml REPEATS TIMER BINARY...
#   OMP_NUM_THREADS=1 bench/ab_timers.sh water.toml 6 md.forces old/cumulus build/host/cumulus
#
# JOB.toml's [run] directory is replaced by a temporary one for each run.
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 JOB.toml REPEATS TIMER BINARY..." >&2
  exit 2
fi
job=$1 repeats=$2 timer=$3
shift 3
[ -f "$job" ] || { echo "$0: $job: no such job file" >&2; exit 2; }
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "$0: REPEATS: expected a positive integer, got '$repeats'" >&2; exit 2; }
for b in "$@"; do [ -x "$b" ] || { echo "$0: $b: not an executable" >&2; exit 2; }; done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results
for ((r = 0; r < repeats; ++r)); do
  for b in "$@"; do
    d=$(mktemp -d "$work/run.XXXX")
    sed "s#^directory *=.*#directory = \"$d/run\"#" "$job" > "$d/job.toml"
    /usr/bin/time -f "%U" -o "$d/user" "$b" run "$d/job.toml" > "$d/out" 2>&1 ||
      { echo "$0: $b failed (its output: $d/out)" >&2; cat "$d/out" >&2; exit 1; }
    t=$(awk -v k="$timer" '$1 == k {print $3; exit}' "$d/run/cumulus.log")
    [ -n "$t" ] || { echo "$0: no timer '$timer' in $d/run/cumulus.log" >&2; exit 1; }
    echo "$b $t $(cat "$d/user")" | tee -a "$results"
    rm -rf "$d"
  done
done
echo "binary: $timer mean / least (s), user CPU mean / least (s), over $repeats runs"
awk '{n[$1]++; s[$1] += $2; u[$1] += $3
      if (!($1 in m) || $2 < m[$1]) m[$1] = $2
      if (!($1 in v) || $3 < v[$1]) v[$1] = $3}
     END {for (b in n) printf "%s: %.3f / %.3f, %.2f / %.2f\n", b, s[b] / n[b], m[b], u[b] / n[b], v[b]}' "$results"
