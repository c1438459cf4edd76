#!/bin/bash
# Blocking health queries (issue 38): W idle watchers (1,000) on /v1/health/service/web?index=N&wait=5m against one server
# of three on loopback (a follower; -l: the leader), and in each of R runs on the same cluster: the server's CPU
# (/proc/PID/stat, user + system) over S seconds without watchers (the baseline) and then with the watchers idle; C
# changes (a catalog register that flips a check of web between passing and warning, sent to the leader) and each
# watcher's latency from the write's acknowledgement to its answer; then an unrelated service and a KV write, which
# must wake no watcher. The load tool is HealthWatchBenchmark (distribution's tests, Vert.x's HTTP client, one
# connection a watcher, spread over the client's event loops); it starts the servers from the built distribution.
#
#   bench/health-watch-bench.sh [-w watchers] [-s seconds] [-r runs] [-c changes] [-n servers] [-l] [-q stale] [-d dir] [-p] [-k client]
#
# -q adds query parameters to every watcher's request (-q stale: ?stale, served without a ReadIndex round).
# -d runs the servers from the distribution unpacked in dir (another build's: an A/B pair, one load tool for both).
# -p pins the watched server to core 1 and the other servers and the load tool to core 0 (taskset), as on machines of
# their own: the watchers' client then takes none of the watched server's CPU during its burst of answers.
# -k chooses the watchers' client: vertx (the default: Vert.x's HTTP client on its event loops) or selector (one thread,
# one NIO selector, raw HTTP/1.1, each answer timed at the read that completed it, before any answer is parsed).
#
# Figures go to stdout and to bench/results/health-watch-<time>/ (health-watch-raw.txt: every change's sending and
# acknowledgement and every answer's arrival, System.nanoTime, which all processes of the machine share). MVN_FLAGS
# (default -o) is passed to Maven.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
watchers=1000 seconds=60 runs=3 changes=20 servers=3 watched=follower parameters="" distribution="" pin=false client=vertx
while getopts "w:s:r:c:n:lq:d:pk:" opt; do
  case $opt in
    w) watchers=$OPTARG ;; s) seconds=$OPTARG ;; r) runs=$OPTARG ;; c) changes=$OPTARG ;; n) servers=$OPTARG ;; l) watched=leader ;; q) parameters=$OPTARG ;; d) distribution=$OPTARG ;; p) pin=true ;; k) client=$OPTARG ;;
    *) echo "usage: $0 [-w watchers] [-s seconds] [-r runs] [-c changes] [-n servers] [-l] [-q stale] [-d dir] [-p] [-k vertx|selector]" >&2; exit 2 ;;
  esac
done
out="$here/results/health-watch-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
cd "$repo"
rm -rf distribution/target/failsafe-reports distribution/target/health-watch-benchmark.txt distribution/target/health-watch-raw.txt
mvn -B ${MVN_FLAGS--o} -pl distribution -am verify -Phealth-watch-bench -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
  -Dfailsafe.failIfNoSpecifiedTests=false -Dhealth.bench.watchers="$watchers" -Dhealth.bench.seconds="$seconds" \
  -Dhealth.bench.runs="$runs" -Dhealth.bench.changes="$changes" -Dhealth.bench.servers="$servers" \
  -Dhealth.bench.watched="$watched" -Dhealth.bench.parameters="$parameters" -Dhealth.bench.distribution="$distribution" -Dhealth.bench.pin="$pin" -Dhealth.bench.client="$client" > "$out/maven.log" 2>&1 || { tail -50 "$out/maven.log" >&2; exit 1; }
cp distribution/target/health-watch-benchmark.txt "$out/"
cp distribution/target/health-watch-raw.txt "$out/" 2>/dev/null || true
cat "$out/health-watch-benchmark.txt"
