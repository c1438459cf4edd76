#!/bin/bash
# Conclave against etcd, side by side, every figure of issue 42 in one run: three etcd members and three Conclave
# agents, each cluster on loopback, one cluster running at a time, the same wrk load sent to the leader of each.
#
#   writes: 100-byte values, keys cycling over 10,000 names (wrk/conclave-put.lua, wrk/etcd-put.lua), at each count of
#           connections of -c (1 16 64 256); then the same writes again from RawLatency.java, a closed-loop client that
#           reports what its connections waited, uncorrected ("raw"): wrk 4.1 corrects its latency histogram for
#           coordinated omission (it adds samples as if requests had kept coming at the mean rate during a stall), which
#           weighs the same stall more for the faster server; both p99s are shown (RawLatency.java says more);
#   reads:  10,000 keys of 100 bytes loaded once per cluster (wrk/*-load.lua), then read at -C connections (64) in two
#           modes (wrk/conclave-get.lua, wrk/etcd-range.lua): Conclave's default consistency against etcd's
#           linearizable reads (both a ReadIndex round with the leader), and Conclave's ?stale against etcd's
#           serializable reads (both the member's own state).
#
# Each round starts a fresh cluster of each system in turn (etcd, then Conclave), warms it up with -w seconds of writes
# at 64 connections (and, for the reads, -w seconds of default-consistency reads), then measures each load for -d
# seconds. The summary gives, per load, the median over the rounds of each system's requests/s and of its p99 (each
# median taken on its own), and the ratio Conclave/etcd of the median rates.
#
#   bench/etcd-vs-conclave.sh [-m writes|reads|all] [-r rounds] [-w warmup-seconds] [-d seconds] [-c "1 16 64 256"]
#                             [-C read-connections] [-s conclave|etcd|both] [-H]
#
# -H appends one dated line of the medians to the table "History of etcd-vs-conclave runs" in docs/performance.md
# (only with -m all, -s both and the default -c and -C, so that every line holds the same figures). Without -H nothing
# is appended, so that short smoke runs (-r 1 -w 2 -d 2) leave the history alone.
#
# Environment: JAVA_OPTS and EXTRA_JAVA_OPTS are passed to the Conclave agents; CONCLAVE_DIST is the distribution
# folder to run (default: this checkout's distribution/target); BENCH_TMP the folder under which both systems' data
# directories are made (default /tmp: set it to a tmpfs to take the disk's syncs out of a comparison); JFR_DIR, when
# set, makes the script record every measured Conclave load on every server with JFR (jcmd JFR.start right before
# the load, JFR.stop right after it, the settings of JFR_SETTINGS, default "profile"), one file per load and server:
# $JFR_DIR/r<round>-conclave-<w|rc|rs><connections>-c<server>-<leader|follower>.jfr.
# RAW_FIRST=1 sends each count's writes from RawLatency.java before wrk's instead of after them, to tell the order's
# share from the client's (2026-12-07: at 1 connection, every stage of Conclave's writes, the disk's sync included, took
# 1.3-1.8x as long under wrk, the first load after the warm-up at 64 connections, as under the raw client right after).
# REST_AFTER_WARMUP=<seconds> leaves each cluster idle that long between the warm-up and the first measured load, to
# tell whether what slows the first load after the burst passes with time (default 0). WARM_EACH=<seconds> sends each
# count's writes for that long, unmeasured, before its measured loads (default 0: only the warm-up at 64 connections),
# to tell whether the first load of a new count is slow because it is the first of its shape (both systems get it).
#
# Warm-up: keep the default 30 s for any figure. On a loaded two-core machine, with -w 1 or 2, Conclave's writes at 1
# connection ran 20x slower than after 30 s (the JIT compilers still at work). JFR_DIR's recordings (settings=profile)
# slow a write at 1 connection six- to eightfold: take latency figures from runs without it.
#
# Needs: etcd (Debian's etcd-server, 3.4), wrk, curl, and the built distribution (mvn -B package -DskipTests).
# Figures go to stdout and to bench/results/<time>/ (summary.tsv: every run; medians.tsv: the medians; stages.tsv: each
# server's own mean time per stage of a write over each load, from its metrics: Conclave's and etcd's syncs among them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
mode=all rounds=3 warmup=30 duration=10 conns="1 16 64 256" read_conns=64 systems=both history=0
usage="usage: $0 [-m writes|reads|all] [-r rounds] [-w warmup] [-d duration] [-c \"1 16 64 256\"] [-C read-connections] [-s conclave|etcd|both] [-H]"
while getopts "m:r:w:d:c:C:s:H" opt; do
  case $opt in
    m) mode=$OPTARG ;; r) rounds=$OPTARG ;; w) warmup=$OPTARG ;; d) duration=$OPTARG ;; c) conns=$OPTARG ;;
    C) read_conns=$OPTARG ;; s) systems=$OPTARG ;; H) history=1 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
case $mode in writes | reads | all) ;; *) echo "-m: writes, reads or all, not '$mode'" >&2; echo "$usage" >&2; exit 2 ;; esac
case $systems in conclave | etcd | both) ;; *) echo "-s: conclave, etcd or both, not '$systems'" >&2; exit 2 ;; esac
if [ $history = 1 ] && { [ "$mode" != all ] || [ "$systems" != both ] || [ "$conns" != "1 16 64 256" ] || [ "$read_conns" != 64 ]; }; then
  echo "-H needs -m all, -s both and the default -c and -C: a history line holds the same figures of both systems as the others" >&2; exit 2
fi
for tool in etcd wrk curl; do
  command -v $tool >/dev/null || { echo "$tool not found: apt-get install etcd-server wrk curl" >&2; exit 2; }
done
dist=${CONCLAVE_DIST:-$(ls -d "$repo"/distribution/target/conclave-*/conclave-*/ 2>/dev/null | head -1)}
[ -x "$dist/bin/conclave" ] || { echo "no distribution: run mvn -B package -DskipTests first" >&2; exit 2; }
if [ -n "${JFR_DIR:-}" ]; then
  command -v jcmd >/dev/null || { echo "JFR_DIR is set but jcmd is not on PATH" >&2; exit 2; }
  mkdir -p "$JFR_DIR"
fi

started_at=$(date -u +%Y-%m-%dT%H:%MZ)
# The build's commit, taken now (an edit made while the run goes on is not in the distribution): "+" when its checkout
# had uncommitted changes.
commit=$(git -C "$dist" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$dist" status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit+"
out="$here/results/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
work=$(mktemp -d "${BENCH_TMP:-/tmp}/conclave-bench-XXXX")
pids=()
. "$here/lib.sh"
trap 'stop_all; rm -rf "$work"' EXIT

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
  mkdir -p "$work/conclave"
  conclave_start "$dist" "$work/conclave" "$out/conclave-c" 24300 24500
}
conclave_leader() { conclave_leader_at 24500; }

# How many writes the leader has committed: Conclave's commit index, etcd's revision (one per put).
conclave_committed() {
  curl -sf "http://$1/v1/agent/self" | sed -n 's/.*"commit_index" : "\([0-9]*\)".*/\1/p'
}
etcd_committed() {
  curl -sf -X POST -d '{"key":"AA=="}' "http://$1/v3/kv/range" | sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p'
}

# Whether the last key of each of the load's two threads reads back.
conclave_loaded() { curl -sf "http://$1/v1/kv/load/0/4999" > /dev/null && curl -sf "http://$1/v1/kv/load/1/4999" > /dev/null; }
etcd_loaded() { # base64 of load/0/4999 and load/1/4999
  curl -sf -X POST -d '{"key":"bG9hZC8wLzQ5OTk="}' "http://$1/v3/kv/range" | grep -q '"kvs"' &&
    curl -sf -X POST -d '{"key":"bG9hZC8xLzQ5OTk="}' "http://$1/v3/kv/range" | grep -q '"kvs"'
}

# Writes 10,000 keys load/<0|1>/<n> of 100 bytes once (the keys the read loads ask for). wrk's threads stop sending
# writes after their share but wrk itself does not end, and thread 0's first key (load/0/0) was found unwritten after
# such a load (9,999 puts in etcd's revision): the load is done once the leader committed 9,990 entries more and the
# last key of each thread reads back; wrk is stopped then, and load/0/0 and load/1/0 are written again with curl.
load_keys() { # system leader
  local report="$out/r$round-$1-load.txt" before
  before=$("${1}_committed" "$2")
  KEYS=10000 VALUE_SIZE=100 THREADS=2 wrk -t2 -c64 -d600s -s "$here/wrk/$1-load.lua" "http://$2" > "$report" 2>&1 &
  local loader=$!
  loaded() { local now; now=$("${1}_committed" "$2") && [ $((now - before)) -ge 9990 ] && "${1}_loaded" "$2"; }
  wait_for 120 loaded "$1" "$2" || true
  kill $loader 2>/dev/null || true; wait $loader 2>/dev/null || true
  "${1}_put_first" "$2"
  "${1}_loaded" "$2" || { echo "round $round $1: the loaded keys do not read back (see $report)" >&2; exit 1; }
}
conclave_put_first() {
  local value; value=$(printf 'v%.0s' $(seq 100))
  for key in load/0/0 load/1/0; do curl -sf -X PUT --data "$value" "http://$1/v1/kv/$key" > /dev/null; done
}
etcd_put_first() { # the keys and the 100-byte value base64
  local value; value=$(printf 'v%.0s' $(seq 100) | base64 -w0)
  for key in bG9hZC8wLzA= bG9hZC8xLzA=; do
    curl -sf -X POST -d "{\"key\":\"$key\",\"value\":\"$value\"}" "http://$1/v3/kv/put" > /dev/null
  done
}

# The Conclave servers' PIDs and roles, to record each measured load with JFR.
jfr_start() { # system leader label
  [ -n "${JFR_DIR:-}" ] && [ "$1" = conclave ] || return 0
  for i in 0 1 2; do
    jcmd "${pids[$i]}" JFR.start name=bench settings="${JFR_SETTINGS:-profile}" > /dev/null
  done
}
jfr_stop() { # system leader label
  [ -n "${JFR_DIR:-}" ] && [ "$1" = conclave ] || return 0
  for i in 0 1 2; do
    local role=follower
    [ "$2" = "127.0.0.1:2450$i" ] && role=leader
    jcmd "${pids[$i]}" JFR.stop name=bench filename="$JFR_DIR/$3-c$i-$role.jfr" > /dev/null
  done
}

# run_wrk system leader load conns seconds label -> prints "rate p50 p99 errors committed answered"
# load: w (writes), rc (reads, Conclave's default consistency / etcd's linearizable), rs (Conclave's ?stale / etcd's
# serializable). errors: non-2xx answers and socket errors; committed (writes only, else the answered count): writes
# the leader committed meanwhile (at least the answered requests, or the figure is not a count of real writes).
run_wrk() {
  local system=$1 leader=$2 load=$3 c=$4 seconds=$5 label=$6 threads=2 script env=()
  [ "$c" -lt 2 ] && threads=1
  case $load in
    w) script=$system-put.lua ;;
    rc) script=$( [ "$system" = etcd ] && echo etcd-range.lua || echo conclave-get.lua ) ;;
    rs) script=$( [ "$system" = etcd ] && echo etcd-range.lua || echo conclave-get.lua ); env=(STALE=1 SERIALIZABLE=1) ;;
  esac
  local report="$out/$label.txt"
  local before after
  before=$("${system}_committed" "$leader")
  env KEYS=10000 THREADS=2 "${env[@]}" wrk -t$threads -c$c -d${seconds}s --latency -s "$here/wrk/$script" "http://$leader" > "$report" 2>&1
  after=$("${system}_committed" "$leader")
  local rate p50 p99 errors answered
  read -r rate p50 p99 errors answered < <(wrk_figures "$report")
  local committed=$((after - before))
  [ "$load" = w ] || committed=$answered
  echo "$rate $p50 $p99 $errors $committed $answered"
}

# Each server's own timings of the stages of a write, taken before and after each measured load; stages.tsv gets, per
# server, each stage's count and mean over the load. Conclave: /v1/agent/metrics, the count and sum of
# raft.commit.latency, raft.persist.wait, raft.fsync.latency, raft.apply.latency (python3 needed; skipped without it),
# and the JIT's work during the load (jstat -compiler, when the JDK has it): jit.compilations (count, mean compile time)
# and jit.invalidated (jstat's "Invalid": compilation tasks invalidated). They are asked once in the warm-up too: the
# first request to /v1/agent/metrics loads classes, and under -XX:+PrintCompilation a group of C2-compiled methods was
# made not entrant in the load that followed it.
# etcd: /metrics, the histograms etcd_disk_wal_fsync_duration_seconds (the WAL's fdatasync) and
# etcd_disk_backend_commit_duration_seconds (bbolt's commit), so that both systems' syncs are read side by side.
server_metrics() { # label before|after
  if [ "$system" = etcd ]; then
    for i in 0 1 2; do
      curl -sf "http://127.0.0.1:2437$i/metrics" | grep -E '^etcd_disk_(wal_fsync|backend_commit)_duration_seconds_(sum|count) ' \
        > "$out/$1-metrics-e$i-$2.txt" || true
    done
    return 0
  fi
  command -v python3 > /dev/null || return 0
  for i in 0 1 2; do curl -sf "http://127.0.0.1:2450$i/v1/agent/metrics" > "$out/$1-metrics-c$i-$2.json" || true; done
  if command -v jstat > /dev/null; then # the JIT's compilations so far: "Compiled Failed Invalid Time ..." (Time in s)
    for i in 0 1 2; do jstat -compiler "${pids[$i]}" 2>/dev/null | tail -1 > "$out/$1-jit-c$i-$2.txt" || true; done
  fi
}
server_stages() { # label leader
  if [ "$system" = etcd ]; then
    for i in 0 1 2; do
      local role=follower
      [ "$2" = "127.0.0.1:2437$i" ] && role=leader
      awk -v label="$1" -v server="e$i" -v role="$role" '
        FNR == NR { before[$1] = $2; next }
        { after[$1] = $2 }
        END {
          for (name in after) if (name ~ /_count$/) {
            stage = name; sub(/_count$/, "", stage)
            count = after[name] - before[name]
            if (count > 0) printf "%s\t%s\t%s\t%s\t%d\t%.3f\n", label, server, role, stage, count,
              (after[stage "_sum"] - before[stage "_sum"]) * 1000 / count
          }
        }' "$out/$1-metrics-e$i-before.txt" "$out/$1-metrics-e$i-after.txt" >> "$out/stages.tsv" || true
    done
    return 0
  fi
  command -v python3 > /dev/null || return 0
  for i in 0 1 2; do
    local role=follower
    [ "$2" = "127.0.0.1:2450$i" ] && role=leader
    python3 - "$out/$1-metrics-c$i-before.json" "$out/$1-metrics-c$i-after.json" "$1" "c$i" "$role" >> "$out/stages.tsv" <<'PYTHON' || true
import json, sys
def samples(path):
    try:
        return {s["Name"]: s for s in json.load(open(path)).get("Samples", [])}
    except (OSError, ValueError):
        return {}
before, after = samples(sys.argv[1]), samples(sys.argv[2])
for name in ("raft.commit.latency", "raft.persist.wait", "raft.fsync.latency", "raft.apply.latency"):
    a, b = after.get(name), before.get(name, {"Count": 0, "Sum": 0})
    if a and a["Count"] > b["Count"]:
        count = a["Count"] - b["Count"]
        print("\t".join([sys.argv[3], sys.argv[4], sys.argv[5], name, str(count), "%.3f" % ((a["Sum"] - b["Sum"]) / count)]))
# the JIT's compilations during the load (jstat -compiler), and their mean compile time; jstat's "Invalid" too
def jit(path):
    try:
        fields = open(path.replace("-metrics-", "-jit-").replace(".json", ".txt")).read().split()
        return int(fields[0]), int(fields[2]), float(fields[3])
    except (OSError, ValueError, IndexError):
        return None
jb, ja = jit(sys.argv[1]), jit(sys.argv[2])
if jb and ja:
    compiled = ja[0] - jb[0]
    print("\t".join([sys.argv[3], sys.argv[4], sys.argv[5], "jit.compilations", str(compiled),
                     "%.3f" % ((ja[2] - jb[2]) * 1000 / compiled if compiled else 0)]))
    print("\t".join([sys.argv[3], sys.argv[4], sys.argv[5], "jit.invalidated", str(ja[1] - jb[1]), "0"]))
PYTHON
  done
}

# run_raw system leader conns seconds label -> the same figures as run_wrk, from RawLatency.java (writes, right after
# wrk's at the same count; 5 s of unrecorded warm-up first, for the client's own JIT).
run_raw() {
  local system=$1 leader=$2 c=$3 seconds=$4 label=$5
  local report="$out/$label.txt" before after
  before=$("${system}_committed" "$leader")
  java "$here/RawLatency.java" "$system" "$leader" "$c" 5 "$seconds" > "$report" 2> "$out/$label.err" ||
    { echo "round $round $system raw c=$c: the client failed: $(cat "$out/$label.err")" >&2; exit 1; }
  after=$("${system}_committed" "$leader")
  local rate p50 p99 p999 max errors answered busy
  read -r rate p50 p99 p999 max errors answered busy < "$report"
  echo "$rate ${p50}ms ${p99}ms $errors $((after - before)) $answered"
}

# measure system leader load conns: one measured load, a line of the summary.
measure() {
  local system=$1 leader=$2 load=$3 c=$4 label="r$round-$1-$3$4"
  jfr_start "$system" "$leader" "$label"
  server_metrics "$label" before
  if [ "$load" = wr ]; then
    read -r rate p50 p99 errors committed answered < <(run_raw "$system" "$leader" "$c" "$duration" "$label")
  else
    read -r rate p50 p99 errors committed answered < <(run_wrk "$system" "$leader" "$load" "$c" "$duration" "$label")
  fi
  server_metrics "$label" after
  server_stages "$label" "$leader"
  jfr_stop "$system" "$leader" "$label"
  echo -e "$round\t$system\t$load\t$c\t$rate\t$p50\t$p99\t$errors\t$committed\t$answered\t$(load_average)" | tee -a "$summary"
  if [ "$committed" -lt "$answered" ]; then
    echo "round $round $system $load c=$c: $answered answers but only $committed writes committed" >&2
    exit 1
  fi
}

summary="$out/summary.tsv"
echo -e "round\tsystem\tload\tconnections\trequests_per_s\tp50\tp99\terrors\tcommitted\tanswered\tload_average" > "$summary"
echo -e "label\tserver\trole\tstage\tcount\tmean_ms" > "$out/stages.tsv"
echo "writes at \"$conns\" connections, reads at $read_conns; mode $mode, $rounds round(s), warm-up ${warmup}s, ${duration}s per load; distribution $dist; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq 1 "$rounds"); do
  for system in etcd conclave; do
    [ "$systems" = both ] || [ "$systems" = "$system" ] || continue
    rm -rf "$work/etcd" "$work/conclave"
    "start_$system"
    leader=""
    wait_for 60 "${system}_leader"
    leader=$("${system}_leader")
    echo "round $round: $system leader at $leader; warming up ${warmup}s" >&2
    # the servers' metrics asked once in the middle of the warm-up: the first such request loads classes of its own,
    # and a class loaded in a measured load costs it the recompilation of hot code (seen 2026-12-07: see server_metrics)
    ( sleep $((warmup / 2)); server_metrics "r$round-$system-warmup" mid ) &
    warmup_metrics=$!
    run_wrk "$system" "$leader" w 64 "$warmup" "r$round-$system-warmup" > /dev/null
    wait "$warmup_metrics" || true
    if [ "${REST_AFTER_WARMUP:-0}" -gt 0 ]; then sleep "$REST_AFTER_WARMUP"; fi # idle on purpose: see the header
    if [ "$mode" != reads ]; then
      for c in $conns; do
        if [ "${WARM_EACH:-0}" -gt 0 ]; then # this count's load, unmeasured, before its measured ones: see the header
          run_wrk "$system" "$leader" w "$c" "$WARM_EACH" "r$round-$system-warm-w$c" > /dev/null
        fi
        if [ "${RAW_FIRST:-0}" = 1 ]; then measure "$system" "$leader" wr "$c"; measure "$system" "$leader" w "$c"
        else measure "$system" "$leader" w "$c"; measure "$system" "$leader" wr "$c"; fi
      done
    fi
    if [ "$mode" != writes ]; then
      load_keys "$system" "$leader"
      run_wrk "$system" "$leader" rc "$read_conns" "$warmup" "r$round-$system-read-warmup" > /dev/null
      measure "$system" "$leader" rc "$read_conns"
      measure "$system" "$leader" rs "$read_conns"
    fi
    stop_all
  done
done

# Medians per system and load: rate, p99 (ms), errors summed, least and most load average of the measured runs.
medians="$out/medians.tsv"
awk -F'\t' -v extremes="$out/load-average.tsv" 'NR > 1 {key = $2 "\t" $3 "\t" $4; rates[key] = rates[key] " " $5; p99s[key] = p99s[key] " " ms($7); errs[key] += $8
    if (low == "" || $11 + 0 < low) low = $11 + 0; if ($11 + 0 > high) high = $11 + 0 }
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((n + 1) / 2)]
  }
  function ms(text) { if (text ~ /us$/) return text / 1000; if (text ~ /ms$/) return text + 0; if (text ~ /s$/) return text * 1000; return text }
  END { for (key in rates) printf "%s\t%s\t%s\t%d\n", key, median(rates[key]), median(p99s[key]), errs[key]
        printf "load\tload_average\t%s\t%s\n", low, high > extremes }' "$summary" | sort > "$medians"
read -r _ _ load_low load_high < "$out/load-average.tsv"

# The table: one line per load, both systems and the ratio of the median rates.
describe() { # load conns
  case $1 in
    w) echo "writes, $2 connection$([ "$2" = 1 ] || echo s)" ;;
    wr) echo "  the same, the connections' own waits (raw p99)" ;;
    rc) echo "reads, $2 connections, default consistency / linearizable" ;;
    rs) echo "reads, $2 connections, stale / serializable" ;;
  esac
}
figure() { # system load conns -> "rate p99 errors" or "- - -"
  awk -F'\t' -v s="$1" -v l="$2" -v c="$3" '$1 == s && $2 == l && $3 == c {print $4, $5, $6; found = 1} END {if (!found) print "- - -"}' "$medians"
}
loads=()
if [ "$mode" != reads ]; then for c in $conns; do loads+=("w:$c" "wr:$c"); done; fi
if [ "$mode" != writes ]; then loads+=("rc:$read_conns" "rs:$read_conns"); fi
echo
echo "medians over $rounds round(s) of ${duration}s (requests/s, p99 ms); load average $load_low to $load_high (1 min, at the end of each measured load); wrk reports in $out"
printf "%-56s %12s %9s %12s %9s %7s\n" load "Conclave/s" "p99 ms" "etcd/s" "p99 ms" ratio
cells=()
for entry in "${loads[@]}"; do
  load=${entry%%:*} c=${entry##*:}
  read -r crate cp99 cerr < <(figure conclave "$load" "$c")
  read -r erate ep99 eerr < <(figure etcd "$load" "$c")
  ratio=-
  [ "$crate" != - ] && [ "$erate" != - ] && ratio=$(awk -v a="$crate" -v b="$erate" 'BEGIN {printf "%.2fx", a / b}')
  printf "%-56s %12s %9s %12s %9s %7s\n" "$(describe "$load" "$c")" "$crate" "$cp99" "$erate" "$ep99" "$ratio"
  [ "$cerr" = - ] || [ "$cerr" = 0 ] || echo "  Conclave: $cerr errors (non-2xx or socket) over the rounds"
  [ "$eerr" = - ] || [ "$eerr" = 0 ] || echo "  etcd: $eerr errors (non-2xx or socket) over the rounds"
  [ "$load" != wr ] || continue # its p99 goes into the history cell of the wrk line above
  if [ "$ratio" != - ]; then
    errors_note=""
    [ "$cerr" = 0 ] && [ "$eerr" = 0 ] || errors_note=" ($cerr / $eerr errors)"
    cp99_cell=$cp99 ep99_cell=$ep99
    if [ "$load" = w ]; then # the raw client's p99 beside wrk's
      read -r _ craw _ < <(figure conclave wr "$c")
      read -r _ eraw _ < <(figure etcd wr "$c")
      [ "$craw" = - ] || cp99_cell="$cp99; raw $craw"
      [ "$eraw" = - ] || ep99_cell="$ep99; raw $eraw"
    fi
    cells+=("$(printf "%.0f (%s) / %.0f (%s) = %s%s" "$crate" "$cp99_cell" "$erate" "$ep99_cell" "$ratio" "$errors_note")")
  fi
done

[ $history = 1 ] || exit 0

# One line in docs/performance.md's history table; the section and its header are created on the first run.
doc="$repo/docs/performance.md"
warm="warm-up ${warmup}s"
if [ "${REST_AFTER_WARMUP:-0}" -gt 0 ]; then warm="$warm, then ${REST_AFTER_WARMUP}s idle"; fi
if [ "${WARM_EACH:-0}" -gt 0 ]; then warm="$warm, ${WARM_EACH}s of each count's writes before it"; fi
line="| $started_at | $commit | $rounds × ${duration}s, $warm | $load_low–$load_high |"
headers="| date (UTC) | commit | rounds | load average |"
rule="|---|---|---|---|"
for entry in "${loads[@]}"; do
  load=${entry%%:*} c=${entry##*:}
  [ "$load" != wr ] || continue
  case $load in w) headers="$headers writes, $c conn. |" ;; rc) headers="$headers reads $c, consistent / linearizable |" ;; rs) headers="$headers reads $c, stale / serializable |" ;; esac
  rule="$rule---|"
done
for cell in "${cells[@]}"; do line="$line $cell |"; done
section="## History of etcd-vs-conclave runs"
if ! grep -qF "$section" "$doc"; then
  cat >> "$doc" <<EOF

$section

One line per run of \`bench/etcd-vs-conclave.sh -H\` (\`-m all -s both\`), appended by the script: three etcd 3.4
members (Debian's \`etcd-server\`) and three Conclave servers on loopback, one cluster at a time, rounds alternating
the systems, wrk against each leader. Writes: 100-byte values over 10,000 keys at each count of connections. Reads:
10,000 keys of 100 bytes loaded once, then read at 64 connections with Conclave's default consistency against etcd's
linearizable reads (both a ReadIndex round), and with Conclave's \`?stale\` against etcd's serializable reads (both the
member's own state). Columns: the run's start; the commit of the checkout the distribution was built in (\`+\`: that
checkout had uncommitted changes); rounds × seconds per load and the warm-up; the least and most 1-minute load
average at the end of the measured loads (this is a shared two-core machine: figures of runs at different loads
compare poorly); then for each load \`Conclave requests/s (p99 ms) / etcd requests/s (p99 ms) = ratio of the
rates\`, each figure the median over the rounds (the p99 median taken on its own), and the errors (non-2xx answers or
socket errors, Conclave / etcd) when there were any. A write's p99 is wrk's (corrected by wrk for coordinated
omission), then, from lines of 2026-12-06 21:00 on, "raw": the p99 of the same writes sent again by
\`bench/RawLatency.java\`, a closed-loop client that reports what its connections waited.

$headers
$rule
EOF
fi
# after the last table line of the section
awk -v section="$section" -v line="$line" '
  { lines[NR] = $0 }
  $0 == section { inside = 1; next }
  inside && /^## / { inside = 0 }
  inside && /^\|/ { last = NR }
  END { for (i = 1; i <= NR; i++) { print lines[i]; if (i == last) print line } }' "$doc" > "$work/performance.md"
cp "$work/performance.md" "$doc"
echo "appended to $doc:"
echo "$line"
