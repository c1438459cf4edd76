#!/bin/bash
# Two (or more) builds of Conclave side by side on the state stores' writes (issue 37): for each round, for each build,
# for each store, a fresh three-server cluster from that build's distribution is loaded with the state and takes one
# run of writes at 64 connections (bench/state-store-bench.sh -w); builds and stores alternate within a round, so that
# a change of the machine's load falls on all of them. Prints every run (writes/s, write p99, the longest GC pause of
# the cluster, the 1-minute load average at the end of the run) and the medians per build and store.
#
#   bench/state-store-ab.sh -b "main=/path/to/main/dist branch=/path/to/branch/dist" [-s "heap mapdb"] [-z 10] [-r 3] [-d 20]
#       [-H branch]
#
# -H build: the heap store runs on that build only (when the builds differ only in the MapDB store), after its other
# stores.
# A distribution folder is distribution/target/conclave-*/conclave-*/ of a build (mvn -B package -DskipTests); copy it
# aside before building the other one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
builds="" systems="heap mapdb" sizes=10 rounds=3 duration=20 heap_on=""
while getopts "b:s:z:r:d:H:" opt; do
  case $opt in
    b) builds=$OPTARG ;; s) systems=$OPTARG ;; z) sizes=$OPTARG ;; r) rounds=$OPTARG ;; d) duration=$OPTARG ;; H) heap_on=$OPTARG ;;
    *) echo "usage: $0 -b \"name=dist name=dist\" [-s \"heap mapdb\"] [-z 10] [-r 3] [-d 20]" >&2; exit 2 ;;
  esac
done
[ -n "$builds" ] || { echo "-b \"name=dist ...\" is needed" >&2; exit 2; }
out="$here/results/state-ab-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
echo -e "size_mib\tround\tbuild\tsystem\twrites_per_s_64\twrite_p99_ms\tgc_max_pause_ms\tload_average_1m\tresults" | tee "$out/runs.tsv"
for size in $sizes; do
  for round in $(seq 1 "$rounds"); do
    for build in $builds; do
      name=${build%%=*} dist=${build#*=}
      for system in $systems $([ "$name" = "$heap_on" ] && echo heap); do
        log="$out/$size-$round-$name-$system.txt"
        CONCLAVE_DIST=$dist "$here/state-store-bench.sh" -z "$size" -s "$system" -r 1 -d "$duration" -w > "$log" 2>&1 || {
          echo "run failed: $log" >&2; tail -5 "$log" >&2; continue; }
        results=$(sed -n 's/.*raw figures in \(.*\)\/raw.tsv/\1/p' "$log")
        figure() { awk -F'\t' -v m="$1" '$4 == m {print $5}' "$results/raw.tsv" | tail -1; }
        echo -e "$size\t$round\t$name\t$system\t$(figure writes_per_s_64)\t$(figure write_p99_ms)\t$(figure gc_max_pause_ms)\t$(figure load_average_1m)\t$results" \
          | tee -a "$out/runs.tsv"
      done
    done
  done
done
echo
echo "medians over $rounds round(s): size, build, system, writes/s, write p99 ms, longest GC pause ms, load average"
awk -F'\t' 'NR > 1 {key = $1 "\t" $3 "\t" $4; w[key] = w[key] " " $5; p[key] = p[key] " " $6; g[key] = g[key] " " $7; l[key] = l[key] " " $8}
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((n + 1) / 2)]
  }
  END { for (key in w) printf "%s\t%s\t%s\t%s\t%s\n", key, median(w[key]), median(p[key]), median(g[key]), median(l[key]) }' "$out/runs.tsv" \
  | sort | tee "$out/summary.tsv"
