#!/bin/bash
# DNS against HTTP for the same data (issue 39): one Conclave server from the distribution, a service of 10 instances
# registered through the catalog API, then rounds that alternate Debian's dnsperf (A queries for web.service.conclave
# over UDP) and wrk (GET /v1/health/service/web?passing, the HTTP health endpoint a client would use instead), each at
# the same concurrency for the same time. The summary gives the median of the rounds: queries (requests) per second,
# and the 99th percentile latency (dnsperf's per-query latencies with -v; wrk's --latency).
#
#   bench/dns-bench.sh [-r rounds] [-d seconds] [-c clients]
#
# Needs: dnsperf (apt-get install dnsperf), wrk, curl, and the built distribution (mvn -B package -DskipTests).
# JAVA_OPTS is passed to the agent. Figures go to stdout and to bench/results/<time>/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
rounds=3 duration=10 clients=8
while getopts "r:d:c:" opt; do
  case $opt in
    r) rounds=$OPTARG ;; d) duration=$OPTARG ;; c) clients=$OPTARG ;;
    *) echo "usage: $0 [-r rounds] [-d seconds] [-c clients]" >&2; exit 2 ;;
  esac
done
for tool in dnsperf wrk curl; do
  command -v $tool >/dev/null || { echo "$tool not found: apt-get install $tool" >&2; exit 2; }
done
dist=$(ls -d "$repo"/distribution/target/conclave-*/conclave-*/ 2>/dev/null | head -1)
[ -x "$dist/bin/conclave" ] || { echo "no distribution: run mvn -B package -DskipTests first" >&2; exit 2; }

out="$here/results/dns-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
work=$(mktemp -d /tmp/conclave-dns-bench-XXXX)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

http=28500 dns=28600
cat > "$work/agent.json" <<EOF
{"server": true, "node_name": "bench", "data_dir": "$work/data", "bootstrap_expect": 1, "leave_drain_time": "0s",
 "ports": {"http": $http, "server": 28300, "serf_lan": 28301, "dns": $dns}}
EOF
"$dist/bin/conclave" agent -config-file "$work/agent.json" > "$out/agent.log" 2>&1 &
pid=$!
deadline=$((SECONDS + 60))
until curl -sf "http://127.0.0.1:$http/v1/status/leader" | grep -q ':'; do
  [ $SECONDS -lt $deadline ] || { echo "the agent did not elect itself within 60 s: see $out/agent.log" >&2; exit 1; }
  sleep 0.2
done
for i in $(seq 1 10); do
  curl -sf -X PUT "http://127.0.0.1:$http/v1/catalog/register" -d "{\"Node\": \"node-$i\", \"Address\": \"10.0.0.$i\",
    \"Service\": {\"ID\": \"web-$i\", \"Service\": \"web\", \"Port\": 8080},
    \"Check\": {\"CheckID\": \"service:web-$i\", \"Name\": \"web-$i\", \"Status\": \"passing\", \"ServiceID\": \"web-$i\"}}" > /dev/null
done
until [ "$(dig @127.0.0.1 -p $dns +short web.service.conclave A 2>/dev/null | wc -l)" -ge 3 ] 2>/dev/null \
    || [ "$(curl -sf "http://127.0.0.1:$http/v1/health/service/web?passing" | grep -o '"ServiceID"' | wc -l)" -eq 10 ]; do
  [ $SECONDS -lt $deadline ] || { echo "the service is not answered within 60 s" >&2; exit 1; }
  sleep 0.2
done
echo "web.service.conclave A" > "$work/queries.txt"

p99() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "n/a"; exit } i = int(NR * 0.99); if (i < 1) i = 1; printf "%.3f", v[i] * 1000 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "round system qps p99_ms" > "$out/rounds.tsv"
for round in $(seq 1 "$rounds"); do
  # a warm-up of each, so that the JIT has compiled both paths before the timed runs
  dnsperf -s 127.0.0.1 -p $dns -d "$work/queries.txt" -l 2 -c "$clients" -q 100 > /dev/null 2>&1 || true
  wrk -t 2 -c "$clients" -d 2s "http://127.0.0.1:$http/v1/health/service/web?passing" > /dev/null 2>&1 || true

  dnsperf -s 127.0.0.1 -p $dns -d "$work/queries.txt" -l "$duration" -c "$clients" -q 100 -v > "$out/dnsperf-$round.txt" 2>&1
  qps=$(sed -n 's/^ *Queries per second: *\([0-9.]*\).*/\1/p' "$out/dnsperf-$round.txt")
  lost=$(sed -n 's/^ *Queries lost: *\([0-9]*\).*/\1/p' "$out/dnsperf-$round.txt")
  # -v lines: "> NOERROR web.service.conclave A 0.000123" (the latency in seconds, last)
  latency=$(grep -E '^> ' "$out/dnsperf-$round.txt" | awk '{ print $NF }' | p99)
  echo "$round dns $qps $latency" >> "$out/rounds.tsv"
  echo "round $round: DNS   $qps queries/s, p99 $latency ms (lost $lost)"

  wrk -t 2 -c "$clients" -d "${duration}s" --latency "http://127.0.0.1:$http/v1/health/service/web?passing" > "$out/wrk-$round.txt" 2>&1
  rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$out/wrk-$round.txt")
  http99=$(awk '$1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 } printf "%.3f", v }' "$out/wrk-$round.txt")
  echo "$round http $rps $http99" >> "$out/rounds.tsv"
  echo "round $round: HTTP  $rps requests/s, p99 $http99 ms"
done
{
  echo "median of $rounds rounds, $clients clients, ${duration}s each, one server, a service of 10 instances:"
  echo "  DNS  (dnsperf, A, UDP):                    $(awk '$2 == "dns" { print $3 }' "$out/rounds.tsv" | median) queries/s, p99 $(awk '$2 == "dns" { print $4 }' "$out/rounds.tsv" | median) ms"
  echo "  HTTP (wrk, /v1/health/service/web?passing): $(awk '$2 == "http" { print $3 }' "$out/rounds.tsv" | median) requests/s, p99 $(awk '$2 == "http" { print $4 }' "$out/rounds.tsv" | median) ms"
} | tee "$out/summary.txt"
