#!/bin/bash
# Side-by-side write load: three etcd members and three Conclave agents, each cluster on loopback, one
# cluster running at a time, the same wrk load (100-byte values, keys cycling over 10,000 names) sent to
# the leader of each, after a warm-up. Rounds alternate the two systems; the summary gives the median.
#
#   bench/etcd-vs-conclave.sh [-r rounds] [-w warmup-seconds] [-d seconds] [-c "1 16 64"] [-s conclave|etcd|both]
#
# Needs: etcd (Debian's etcd-server, 3.4), wrk, and the built distribution (mvn -B package -DskipTests).
# JAVA_OPTS is passed to the Conclave agents. Figures go to stdout and to bench/results/<time>/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
rounds=3 warmup=30 duration=10 conns="1 16 64" systems=both
while getopts "r:w:d:c:s:" opt; do
  case $opt in
    r) rounds=$OPTARG ;; w) warmup=$OPTARG ;; d) duration=$OPTARG ;; c) conns=$OPTARG ;; s) systems=$OPTARG ;;
    *) echo "usage: $0 [-r rounds] [-w warmup] [-d duration] [-c \"1 16 64\"] [-s conclave|etcd|both]" >&2; exit 2 ;;
  esac
done
command -v etcd >/dev/null || { echo "etcd not found: apt-get install etcd-server" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 2; }
dist=$(ls -d "$repo"/distribution/target/conclave-*/conclave-*/ 2>/dev/null | head -1)
[ -x "$dist/bin/conclave" ] || { echo "no distribution: run mvn -B package -DskipTests first" >&2; exit 2; }

out="$here/results/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
work=$(mktemp -d /tmp/conclave-bench-XXXX)
pids=()
stop_all() {
  for pid in "${pids[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]:-}"; do [ -n "$pid" ] && wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT

wait_for() { # seconds, command...
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { echo "timed out waiting for: $*" >&2; return 1; }
    sleep 0.2
  done
}

start_etcd() {
  local cluster="e0=http://127.0.0.1:24380,e1=http://127.0.0.1:24381,e2=http://127.0.0.1:24382"
  for i in 0 1 2; do
    etcd --name e$i --data-dir "$work/etcd/e$i" \
      --listen-client-urls http://127.0.0.1:2437$i --advertise-client-urls http://127.0.0.1:2437$i \
      --listen-peer-urls http://127.0.0.1:2438$i --initial-advertise-peer-urls http://127.0.0.1:2438$i \
      --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token bench \
      --logger zap --log-level error > "$out/etcd-e$i.log" 2>&1 &
    pids+=($!)
  done
}
etcd_leader() {
  for i in 0 1 2; do
    local status
    status=$(curl -sf -X POST -d '{}' http://127.0.0.1:2437$i/v3/maintenance/status) || continue
    local member leader
    member=$(echo "$status" | sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p')
    leader=$(echo "$status" | sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p')
    if [ -n "$member" ] && [ "$member" = "$leader" ]; then echo "127.0.0.1:2437$i"; return 0; fi
  done
  return 1
}

start_conclave() {
  for i in 0 1 2; do
    cat > "$work/c$i.json" <<JSON
{"node_name": "c$i", "server": true, "data_dir": "$work/conclave/c$i", "bootstrap_expect": 3,
 "static_servers": ["127.0.0.1:24300", "127.0.0.1:24301", "127.0.0.1:24302"],
 "ports": {"http": 2450$i, "server": 2430$i, "serf_lan": 0, "dns": -1}}
JSON
    "$dist/bin/conclave" agent -config-file "$work/c$i.json" > "$out/conclave-c$i.log" 2>&1 &
    pids+=($!)
  done
}
conclave_leader() {
  for i in 0 1 2; do
    if curl -sf http://127.0.0.1:2450$i/v1/agent/self | grep -q '"state" : "Leader"'; then echo "127.0.0.1:2450$i"; return 0; fi
  done
  return 1
}

# How many writes the leader has committed: Conclave's commit index, etcd's revision (one per put).
conclave_committed() {
  curl -sf "http://$1/v1/agent/self" | sed -n 's/.*"commit_index" : "\([0-9]*\)".*/\1/p'
}
etcd_committed() {
  curl -sf -X POST -d '{"key":"AA=="}' "http://$1/v3/kv/range" | sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p'
}

# run_wrk system leader conns seconds label -> prints "writes/s p50 p99 errors committed answered"
# errors: non-2xx answers and socket errors; committed: writes the leader committed meanwhile (at least the
# answered requests, or the figure is not a count of real writes).
run_wrk() {
  local system=$1 leader=$2 c=$3 seconds=$4 label=$5 threads=2
  [ "$c" -lt 2 ] && threads=1
  local report="$out/$label.txt"
  local before after
  before=$("${system}_committed" "$leader")
  wrk -t$threads -c$c -d${seconds}s --latency -s "$here/wrk/$system-put.lua" "http://$leader" > "$report" 2>&1
  after=$("${system}_committed" "$leader")
  local rate p50 p99 errors answered
  rate=$(awk '/^Requests\/sec/ {print $2}' "$report")
  p50=$(awk '$1 == "50%" {print $2}' "$report")
  p99=$(awk '$1 == "99%" {print $2}' "$report")
  answered=$(awk '/requests in/ {print $1}' "$report")
  errors=$(awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}' "$report")
  echo "$rate $p50 $p99 $errors $((after - before)) $answered"
}

summary="$out/summary.tsv"
echo -e "round\tsystem\tconnections\twrites_per_s\tp50\tp99\terrors\tcommitted\tanswered" > "$summary"
for round in $(seq 1 "$rounds"); do
  for system in etcd conclave; do
    [ "$systems" = both ] || [ "$systems" = "$system" ] || continue
    rm -rf "$work/etcd" "$work/conclave"
    "start_$system"
    leader=""
    wait_for 60 "${system}_leader"
    leader=$("${system}_leader")
    echo "round $round: $system leader at $leader; warming up ${warmup}s" >&2
    run_wrk "$system" "$leader" 64 "$warmup" "r$round-$system-warmup" > /dev/null
    for c in $conns; do
      read -r rate p50 p99 errors committed answered < <(run_wrk "$system" "$leader" "$c" "$duration" "r$round-$system-c$c")
      echo -e "$round\t$system\t$c\t$rate\t$p50\t$p99\t$errors\t$committed\t$answered" | tee -a "$summary"
      if [ "$committed" -lt "$answered" ]; then
        echo "round $round $system c=$c: $answered answers but only $committed writes committed" >&2
        exit 1
      fi
    done
    stop_all
  done
done

echo
echo "median over $rounds round(s) (writes/s, p99); wrk reports in $out"
awk -F'\t' 'NR > 1 {key = $2 "\t" $3; rates[key] = rates[key] " " $4; p99s[key] = p99s[key] " " $6; errs[key] += $7}
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((n + 1) / 2)]
  }
  function ms(text) { if (text ~ /us$/) return text / 1000; if (text ~ /ms$/) return text + 0; if (text ~ /s$/) return text * 1000; return text }
  END { for (key in rates) { n = split(p99s[key], p, " "); list = ""; for (i = 1; i <= n; i++) list = list " " ms(p[i]);
        printf "%s\t%s writes/s\tp99 %s ms\terrors %d\n", key, median(rates[key]), median(list), errs[key] } }' "$summary" | sort
