#!/bin/bash
# The catalog at scale (issue 38): N nodes (5,000) x 4 service instances with a check each, fed into three servers on
# loopback by a load tool that sends what a client agent's anti-entropy sends (GET /v1/catalog/node/:node and
# /v1/health/node/:node for a full sync, PUT /v1/catalog/register for each write; full syncs on the agent's interval
# scaled by cluster size; 1 % of the checks flapping a minute), with readers of /v1/health/service/:name?passing and
# /v1/catalog/services; then R runs on the loaded cluster of: an S-second window (write ack and read p50/p99, the
# servers' apply latency, anti-entropy bytes per node per minute), a snapshot from the leader (size, time), and a new
# fourth server's catch-up. The load tool is CatalogScaleBenchmark (distribution's tests); it starts the servers from
# the built distribution, at -Xmx<heap> each.
#
#   bench/catalog-scale-bench.sh [-n nodes] [-s seconds] [-r runs] [-i instances-per-service-name] [-x heap]
#
# Figures go to stdout and to bench/results/catalog-scale-<time>/. MVN_FLAGS (default -o) is passed to Maven.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
nodes=5000 seconds=60 runs=3 instances=20 heap=512m
while getopts "n:s:r:i:x:" opt; do
  case $opt in
    n) nodes=$OPTARG ;; s) seconds=$OPTARG ;; r) runs=$OPTARG ;; i) instances=$OPTARG ;; x) heap=$OPTARG ;;
    *) echo "usage: $0 [-n nodes] [-s seconds] [-r runs] [-i instances-per-service-name] [-x heap]" >&2; exit 2 ;;
  esac
done
out="$here/results/catalog-scale-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
cd "$repo"
rm -rf distribution/target/failsafe-reports distribution/target/catalog-scale-benchmark.txt
mvn -B ${MVN_FLAGS--o} -pl distribution -am verify -Pcatalog-scale-bench -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
  -Dfailsafe.failIfNoSpecifiedTests=false -Dscale.bench.nodes="$nodes" -Dscale.bench.seconds="$seconds" \
  -Dscale.bench.runs="$runs" -Dscale.bench.instances="$instances" -Dscale.bench.heap="$heap" \
  > "$out/maven.log" 2>&1 || { tail -50 "$out/maven.log" >&2; exit 1; }
cp distribution/target/catalog-scale-benchmark.txt "$out/"
cat "$out/catalog-scale-benchmark.txt"
