#!/bin/bash
# A/B of consistent reads on a FOLLOWER (issue 42: a follower's forwarded ReadIndex requests, batched): wrk GETs of one
# 100-byte key at the default consistency against a follower of a 3-server cluster on loopback, one cluster at a time,
# rounds alternating the distributions given (A then B, A then B...), 5 s of warm-up then 10 s at each connection count.
#
#   bench/follower-reads-ab.sh ROUNDS "CONNECTIONS" DIST_A DIST_B
#   e.g. bench/follower-reads-ab.sh 3 "64 256" /tmp/dist-main /tmp/dist-branch
#
# A DIST is an unpacked distribution (bin/, lib/): copy distribution/target/conclave-*/conclave-*/ of each build.
# Prints round, distribution, connections, reads/s, p50, p99, errors (non-2xx and socket errors), the 1-minute load
# average; wrk reports and agent logs in /tmp/follower-reads-ab-<time>/. Ports 24700-24702 (server), 24800-24802 (HTTP).
set -euo pipefail
rounds=$1 conns=$2; shift 2
dists=("$@")
out=/tmp/follower-reads-ab-$(date +%Y%m%d-%H%M%S); mkdir -p "$out"
work=$(mktemp -d /tmp/follower-reads-work-XXXX)
pids=()
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
trap 'stop_all; rm -rf "$work"' EXIT
echo -e "round\tdist\tconns\treads_per_s\tp50\tp99\terrors\tload1" > "$out/summary.tsv"
for round in $(seq 1 "$rounds"); do
  for dist in "${dists[@]}"; do
    rm -rf "$work"/c*
    conclave_start "$dist" "$work" "$out/$(basename "$dist")-c" 24700 24800
    wait_for 60 conclave_leader_at 24800 || exit 1
    leader=$(conclave_leader_at 24800); leader=${leader##*:}
    follower=$((24800 + (leader - 24800 + 1) % 3))
    follower_ready() { [ "$(conclave_state $follower)" = Follower ]; }
    wait_for 20 follower_ready || exit 1
    head -c 100 /dev/zero | tr '\0' v | curl -sf -X PUT --data-binary @- "http://127.0.0.1:$leader/v1/kv/bench/k" >/dev/null
    wrk -t2 -c64 -d5s "http://127.0.0.1:$follower/v1/kv/bench/k" > "$out/r$round-$(basename $dist)-warm.txt" 2>&1
    for c in $conns; do
      r="$out/r$round-$(basename $dist)-c$c.txt"
      wrk -t2 -c$c -d10s --latency "http://127.0.0.1:$follower/v1/kv/bench/k" > "$r" 2>&1
      read -r rate p50 p99 errors answered < <(wrk_figures "$r")
      echo -e "$round\t$(basename $dist)\t$c\t$rate\t$p50\t$p99\t$errors\t$(load_average)" | tee -a "$out/summary.tsv"
    done
    stop_all
  done
done
echo "results in $out"
