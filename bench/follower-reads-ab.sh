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
stop_all() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
             for p in "${pids[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop_all; rm -rf "$work"' EXIT
start() { # dist
  rm -rf "$work"/c*
  for i in 0 1 2; do
    cat > "$work/c$i.json" <<JSON
{"node_name": "c$i", "server": true, "data_dir": "$work/c$i", "bootstrap_expect": 3,
 "static_servers": ["127.0.0.1:24700", "127.0.0.1:24701", "127.0.0.1:24702"],
 "ports": {"http": 2480$i, "server": 2470$i, "serf_lan": 0, "dns": -1}}
JSON
    "$1/bin/conclave" agent -config-file "$work/c$i.json" > "$out/c$i-$(basename $1).log" 2>&1 &
    pids+=($!)
  done
}
state() { curl -sf "http://127.0.0.1:2480$1/v1/agent/self" | sed -n 's/.*"state" : "\([A-Za-z]*\)".*/\1/p'; }
echo -e "round\tdist\tconns\treads_per_s\tp50\tp99\terrors\tload1" > "$out/summary.tsv"
for round in $(seq 1 "$rounds"); do
  for dist in "${dists[@]}"; do
    start "$dist"
    leader="" follower=""
    for t in $(seq 1 300); do
      for i in 0 1 2; do [ "$(state $i || true)" = Leader ] && leader=$i; done
      [ -n "$leader" ] && break; sleep 0.2
    done
    [ -n "$leader" ] || { echo "no leader" >&2; exit 1; }
    follower=$(( (leader + 1) % 3 ))
    for t in $(seq 1 100); do [ "$(state $follower || true)" = Follower ] && break; sleep 0.2; done
    head -c 100 /dev/zero | tr '\0' v | curl -sf -X PUT --data-binary @- "http://127.0.0.1:2480$leader/v1/kv/bench/k" >/dev/null
    wrk -t2 -c64 -d5s "http://127.0.0.1:2480$follower/v1/kv/bench/k" > "$out/r$round-$(basename $dist)-warm.txt" 2>&1
    for c in $conns; do
      r="$out/r$round-$(basename $dist)-c$c.txt"
      wrk -t2 -c$c -d10s --latency "http://127.0.0.1:2480$follower/v1/kv/bench/k" > "$r" 2>&1
      rate=$(awk '/^Requests\/sec/ {print $2}' "$r"); p50=$(awk '$1 == "50%" {print $2}' "$r"); p99=$(awk '$1 == "99%" {print $2}' "$r")
      errors=$(awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}' "$r")
      echo -e "$round\t$(basename $dist)\t$c\t$rate\t$p50\t$p99\t$errors\t$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/summary.tsv"
    done
    stop_all
  done
done
echo "results in $out"
