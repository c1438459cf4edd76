#!/bin/bash
# The state stores side by side (issue 37): three Conclave servers keeping their state on the heap, three keeping it in
# MapDB off the heap, and three etcd 3.4 members, each loaded with the same state of 1 KB values (10 MB, 100 MB, 1 GiB),
# one cluster running at a time. For each: writes/s and p99 at 64 connections (random keys overwritten), read p99 at 64
# connections (a member's own state: Conclave's ?stale, etcd's serializable reads), the longest GC pause and the total GC
# time of the run (Conclave: the GC log of every JVM of the cluster, restarts and new servers included, with the longest
# pause's CPU, and the longest pause once the state is loaded; etcd: GODEBUG=gctrace=1, its stop-the-world phases), each
# Conclave server's longest log sync and persist wait (raft.fsync.latency, raft.persist.wait), the heap used
# (Conclave: after the last collection; etcd: Go's heap in use), each server's RSS, a snapshot's time and size (`conclave
# snapshot save`, `etcdctl snapshot save`), a follower's start after a clean stop and after kill -9 (until it holds the
# leader's index again), and a new server's catch-up. Each measurement three times on the same loaded cluster; the
# summary gives medians.
#
#   bench/state-store-bench.sh [-z "10 100 1024"] [-s "heap mapdb etcd"] [-r runs] [-d seconds] [-w] [-u seconds]
#
# -u: before each run's measured writes, this many seconds of the same writes, not measured (a run after the previous
# run's restarts measures its followers' fresh JVMs otherwise; default 0, as the figures of docs/performance.md until
# 2026-12-07 were taken).
# -w: writes only (each run: the writes/s and p99 at 64 connections; no reads, snapshots, restarts or catch-up), with
# the GC figures and the load average; for side-by-side runs of two builds (bench/state-store-ab.sh).
# CONCLAVE_DIST: the distribution folder to run (default: this checkout's distribution/target); EXTRA_JAVA_OPTS: more
# options for the Conclave servers (say a JFR recording).
#
# Sizes in MiB. Heaps: the MapDB store's servers always run at -Xmx256m; the heap store's at HEAP_STORE_XMX (default:
# 512m up to 100 MiB, 6g at 1 GiB). Needs: etcd and etcdctl (Debian's etcd-server and etcd-client, 3.4), wrk, curl, and
# the built distribution (mvn -B package -DskipTests). Figures go to stdout and bench/results/state-<time>/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
sizes="10 100 1024" systems="heap mapdb etcd" runs=3 duration=20 writes_only=0 warmup=0
while getopts "z:s:r:d:wu:" opt; do
  case $opt in
    z) sizes=$OPTARG ;; s) systems=$OPTARG ;; r) runs=$OPTARG ;; d) duration=$OPTARG ;; w) writes_only=1 ;; u) warmup=$OPTARG ;;
    *) echo "usage: $0 [-z \"10 100 1024\"] [-s \"heap mapdb etcd\"] [-r runs] [-d seconds] [-w] [-u seconds]" >&2; exit 2 ;;
  esac
done
for tool in etcd etcdctl wrk curl; do command -v $tool >/dev/null || { echo "$tool not found (apt-get install etcd-server etcd-client wrk curl)" >&2; exit 2; }; done
dist=${CONCLAVE_DIST:-$(ls -d "$repo"/distribution/target/conclave-*/conclave-*/ 2>/dev/null | head -1)}
[ -x "$dist/bin/conclave" ] || { echo "no distribution: run mvn -B package -DskipTests first" >&2; exit 2; }
out="$here/results/state-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
work=$(mktemp -d /tmp/state-bench-XXXX)
# Each server's PID in $work/pid-<name>: the restarts run inside command substitutions (subshells), where a variable
# set would be lost.
pid_of() { cat "$work/pid-$1" 2>/dev/null; }
stop_one() { # name signal
  local p; p=$(pid_of "$1") || return 0
  [ -n "$p" ] || return 0
  kill "-$2" "$p" 2>/dev/null || true
  while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
  rm -f "$work/pid-$1"
}
stop_servers() { # every server this script started (its own pid files, not lib.sh's pids: see stop_one)
  for file in "$work"/pid-*; do [ -e "$file" ] && stop_one "${file##*/pid-}" TERM; done
  return 0
}
. "$here/lib.sh" # wait_for
trap 'stop_servers; rm -rf "$work"' EXIT
millis() { date +%s%3N; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
rec() { echo -e "$1" >> "$out/raw.tsv"; echo -e "$1"; } # size system run metric value

# ---------------------------------------------------------------- Conclave
conclave_config() { # i store
  cat > "$work/c$1.json" <<JSON
{"node_name": "c$1", "server": true, "data_dir": "$work/conclave/c$1", "bootstrap_expect": 3,
 "retry_join": ["127.0.0.1:24600", "127.0.0.1:24601", "127.0.0.1:24602"],
 "plugins": {"state_store": "$2"}, "autopilot": {"server_stabilization_time": "1s"},
 "ports": {"http": 2450$1, "server": 2430$1, "serf_lan": 2460$1, "dns": -1}}
JSON
}
start_store_server() { # i store label
  local heap=256m
  if [ "$2" = heap ]; then heap=${HEAP_STORE_XMX:-$([ "$size" -ge 1024 ] && echo 6g || echo 512m)}; fi
  # one GC log per JVM (%p: its PID), a restart's included; each line stamped with the wall clock (timemillis), and each
  # pause's CPU (gc+cpu), to tell a collector's work from its threads waiting for a core
  JAVA_OPTS="-Xmx$heap -Xlog:gc,gc+cpu:file=$out/gc-$3-c$1-%p.log:timemillis,uptime,level,tags ${EXTRA_JAVA_OPTS:-}" "$dist/bin/conclave" agent -config-file "$work/c$1.json" \
    > "$out/$3-c$1.log" 2>&1 &
  echo $! > "$work/pid-c$1"
}
conclave_leader() {
  for i in 0 1 2 3; do
    if curl -sf http://127.0.0.1:2450$i/v1/agent/self 2>/dev/null | grep -q '"state" : "Leader"'; then echo $i; return 0; fi
  done
  return 1
}
conclave_index() { curl -sf "http://127.0.0.1:2450$1/v1/agent/self" | sed -n 's/.*"applied_index" : "\([0-9]*\)".*/\1/p'; }
conclave_commit() { curl -sf "http://127.0.0.1:2450$1/v1/agent/self" | sed -n 's/.*"commit_index" : "\([0-9]*\)".*/\1/p'; }
conclave_caught_up() { # i target-index
  local index; index=$(conclave_index "$1") || return 1; [ -n "$index" ] && [ "$index" -ge "$2" ]
}

# ---------------------------------------------------------------- etcd
etcd_start() { # i state(new|existing) cluster label
  GODEBUG=gctrace=1 etcd --name e$1 --data-dir "$work/etcd/e$1" --quota-backend-bytes 8589934592 \
    --listen-client-urls http://127.0.0.1:2437$1 --advertise-client-urls http://127.0.0.1:2437$1 \
    --listen-peer-urls http://127.0.0.1:2438$1 --initial-advertise-peer-urls http://127.0.0.1:2438$1 \
    --initial-cluster "$3" --initial-cluster-state "$2" --initial-cluster-token bench \
    --logger zap --log-level error > "$out/$4-e$1.log" 2>&1 &
  echo $! > "$work/pid-e$1"
}
ETCD3="e0=http://127.0.0.1:24380,e1=http://127.0.0.1:24381,e2=http://127.0.0.1:24382"
etcd_status() { curl -sf -X POST -d '{}' "http://127.0.0.1:2437$1/v3/maintenance/status"; }
etcd_leader() {
  for i in 0 1 2 3; do
    local status member leader
    status=$(etcd_status $i) || continue
    member=$(echo "$status" | sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p')
    leader=$(echo "$status" | sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p')
    if [ -n "$member" ] && [ "$member" = "$leader" ]; then echo $i; return 0; fi
  done
  return 1
}
etcd_index() { etcd_status "$1" | sed -n 's/.*"raftIndex":"\([0-9]*\)".*/\1/p'; }
etcd_commit() { etcd_index "$1"; }
etcd_caught_up() { local index; index=$(etcd_index "$1") || return 1; [ -n "$index" ] && [ "$index" -ge "$2" ]; }

# ---------------------------------------------------------------- measurements
system_kind() { [ "$1" = etcd ] && echo etcd || echo conclave; }
port_of() { [ "$(system_kind "$1")" = etcd ] && echo 2437$2 || echo 2450$2; }

load() { # system leader keys -> millis
  local kind; kind=$(system_kind "$1")
  local before; before=$("${kind}_commit" "$2")
  local started; started=$(millis)
  KEYS=$3 VALUE_SIZE=1024 THREADS=2 wrk -t2 -c64 -d36000s -s "$here/wrk/$kind-load.lua" "http://127.0.0.1:$(port_of "$1" "$2")" \
    > "$out/load-$label.txt" 2>&1 &
  local loader=$!
  # done when the loader has stopped by itself (each thread after its share), or the leader committed one entry per
  # key, or the commit index stood still for 5 s past 90 % of them (a write the loader saw fail is not retried)
  local deadline=$((SECONDS + 3600)) last=-1 still=0
  while [ $SECONDS -lt $deadline ] && kill -0 $loader 2>/dev/null; do
    local now; now=$("${kind}_commit" "$2" 2>/dev/null || echo "$before")
    [ -n "$now" ] || now=$before
    [ $((now - before)) -ge "$3" ] && break
    if [ "$now" = "$last" ]; then still=$((still + 1)); else still=0; last=$now; fi
    [ $still -ge 10 ] && [ $((now - before)) -ge $(($3 * 9 / 10)) ] && break
    sleep 0.5
  done
  kill $loader 2>/dev/null || true; wait $loader 2>/dev/null || true
  echo $(( $(millis) - started ))
}

wrk_run() { # system leader read(0|1) keys seconds -> "rate p99ms"
  local kind; kind=$(system_kind "$1")
  local report="$out/wrk-$label-read$3-$(date +%s%N).txt"
  READ=$3 KEYS=$4 VALUE_SIZE=1024 THREADS=2 wrk -t2 -c64 -d${5}s --latency -s "$here/wrk/$kind-update.lua" \
    "http://127.0.0.1:$(port_of "$1" "$2")" > "$report" 2>&1
  local rate p99
  rate=$(awk '/^Requests\/sec/ {print $2}' "$report")
  p99=$(awk '$1 == "99%" {v = $2; if (v ~ /us$/) v = v / 1000; else if (v ~ /ms$/) v = v + 0; else if (v ~ /s$/) v = v * 1000; print v}' "$report")
  local errors; errors=$(awk '/Non-2xx/ {n += $NF} END {print n + 0}' "$report")
  echo "$rate $p99 $errors"
}

snapshot_run() { # system leader -> "millis bytes"
  local file="$work/snapshot.bin" started
  rm -f "$file"; started=$(millis)
  if [ "$1" = etcd ]; then
    etcdctl --endpoints "127.0.0.1:2437$2" snapshot save "$file" > /dev/null 2>&1
  else
    JAVA_OPTS="-Xmx128m" "$dist/bin/conclave" snapshot save -http-addr "127.0.0.1:2450$2" "$file" > /dev/null 2>&1
  fi
  echo "$(( $(millis) - started )) $(stat -c %s "$file")"
}

restart_run() { # system leader follower how(stop|kill) -> millis until it holds the leader's index again
  local kind; kind=$(system_kind "$1")
  local name; name=$([ "$kind" = etcd ] && echo e$3 || echo c$3)
  if [ "$4" = kill ]; then stop_one "$name" KILL; else stop_one "$name" TERM; fi
  local target; target=$("${kind}_commit" "$2")
  local started; started=$(millis)
  if [ "$kind" = etcd ]; then etcd_start "$3" existing "$ETCD3" "$label-restart"; else start_store_server "$3" "$1" "$label-restart-$4"; fi
  wait_for 1800 "${kind}_caught_up" "$3" "$target"
  echo $(( $(millis) - started ))
}

catch_up_run() { # system leader run -> millis for a new server to hold the leader's index
  local kind; kind=$(system_kind "$1")
  local target; target=$("${kind}_commit" "$2")
  local started
  if [ "$kind" = etcd ]; then
    rm -rf "$work/etcd/e3"
    # refused ("unhealthy cluster") until every member has been connected for a while, say after a restart: retried
    wait_for 120 etcdctl --endpoints "127.0.0.1:2437$2" member add e3 --peer-urls=http://127.0.0.1:24383
    started=$(millis)
    etcd_start 3 existing "$ETCD3,e3=http://127.0.0.1:24383" "$label-new"
  else
    rm -rf "$work/conclave/c3"; conclave_config 3 "$1"
    started=$(millis)
    start_store_server 3 "$1" "$label-new-$3"
  fi
  wait_for 1800 "${kind}_caught_up" 3 "$target"
  local took=$(( $(millis) - started ))
  # the new server leaves again, so that the next run adds a new one
  if [ "$kind" = etcd ]; then
    local id; id=$(etcdctl --endpoints "127.0.0.1:2437$2" member list | awk -F', ' '$3 == "e3" {print $1}')
    etcdctl --endpoints "127.0.0.1:2437$2" member remove "$id" > /dev/null 2>&1 || true
    stop_one e3 TERM
  else
    JAVA_OPTS="-Xmx128m" "$dist/bin/conclave" leave -http-addr 127.0.0.1:24503 > /dev/null 2>&1 || true
    stop_one c3 TERM
  fi
  echo $took
}

gc_figures() { # label-prefix kind [since-epoch-ms] -> "max_pause_ms total_ms max_pause_cpu_ms" (Conclave: only the pauses
  # that ended at or after since, when given; the CPU, user + system, of the longest; etcd: since is ignored, cpu "-")
  if [ "$2" = etcd ]; then
    # gctrace: "gc N @Ts P%: A+B+C ms clock, ..." - A and C are the stop-the-world phases
    cat "$out/$1"-e*.log 2>/dev/null | awk '/^gc [0-9]+ @/ {split($5, t, "+"); p = t[1] + t[3]; s += p; if (p > m) m = p} END {printf "%.2f %.1f -\n", m, s}'
  else
    # "[9.997s][<epoch>ms][info][gc] GC(4) Pause Young ... 94.808ms" then "[...][gc,cpu] GC(4) User=0.02s Sys=0.00s Real=0.09s"
    # every JVM of the cluster: the three, their restarts and the new servers
    for file in "$out/gc-$1"-*.log; do [ -e "$file" ] && awk -v since="${3:-0}" '
      { stamp = 0; if (match($0, /\[[0-9]+ms\]/)) stamp = substr($0, RSTART + 1, RLENGTH - 4) + 0; gc = ""; if (match($0, /GC\([0-9]+\)/)) gc = FILENAME substr($0, RSTART, RLENGTH) }
      / Pause / && stamp >= since { v = $NF; sub(/ms$/, "", v); print "P", gc, v }
      /User=/ { u = $0; sub(/.*User=/, "", u); sub(/s .*/, "", u); y = $0; sub(/.*Sys=/, "", y); sub(/s .*/, "", y); print "C", gc, (u + y) * 1000 }' "$file"; done \
      | awk '$1 == "P" {s += $3; if ($3 + 0 > m) {m = $3 + 0; at = $2}; seen[$2] = 1} $1 == "C" && !($2 in cpu) {cpu[$2] = $3}
        END {printf "%.2f %.1f %s\n", m, s, (at in cpu) ? cpu[at] : "-"}'
  fi
}

heap_used_mib() { # label-prefix kind -> the largest heap after a collection (Conclave) or Go heap in use (etcd), MiB
  if [ "$2" = etcd ]; then
    local max=0
    for i in 0 1 2; do
      local bytes; bytes=$(curl -sf "http://127.0.0.1:2437$i/metrics" | awk '/^go_memstats_heap_inuse_bytes/ {print int($2)}')
      [ -n "$bytes" ] && [ "$bytes" -gt "$max" ] && max=$bytes
    done
    echo $((max >> 20))
  else
    for i in 0 1 2; do tail -5 "$(ls -t "$out/gc-$1-c$i"-*.log 2>/dev/null | head -1)" 2>/dev/null | awk '/Pause/ {split($0, a, "->"); split(a[2], b, "M"); print b[1]}' | tail -1; done \
      | sort -n | tail -1
  fi
}

echo -e "size_mib\tsystem\trun\tmetric\tvalue" > "$out/raw.tsv"
for size in $sizes; do
  keys=$((size * 1024))
  for system in $systems; do
    kind=$(system_kind "$system")
    label="$system-$size"
    rm -rf "$work/etcd" "$work/conclave"
    if [ "$kind" = etcd ]; then for i in 0 1 2; do etcd_start $i new "$ETCD3" "$label"; done
    else for i in 0 1 2; do conclave_config $i "$system"; start_store_server $i "$system" "$label"; done; fi
    wait_for 120 "${kind}_leader"
    leader=$("${kind}_leader")
    echo "$label: leader $leader; loading $keys keys of 1 KB" >&2
    rec "$size\t$system\t1\tload_ms\t$(load "$system" "$leader" "$keys")"
    loaded_at=$(millis)
    for run in $(seq 1 "$runs"); do
      leader=$("${kind}_leader")
      [ "$warmup" -gt 0 ] && wrk_run "$system" "$leader" 0 "$keys" "$warmup" > /dev/null
      read -r rate p99 errors < <(wrk_run "$system" "$leader" 0 "$keys" "$duration")
      rec "$size\t$system\t$run\twrites_per_s_64\t$rate"; rec "$size\t$system\t$run\twrite_p99_ms\t$p99"; rec "$size\t$system\t$run\twrite_errors\t$errors"
      rec "$size\t$system\t$run\tload_average_1m\t$(cut -d' ' -f1 /proc/loadavg)"
      [ "$writes_only" = 1 ] && continue
      read -r rate p99 errors < <(wrk_run "$system" "$leader" 1 "$keys" 10)
      rec "$size\t$system\t$run\treads_per_s_64\t$rate"; rec "$size\t$system\t$run\tread_p99_ms\t$p99"
      read -r ms bytes < <(snapshot_run "$system" "$leader")
      rec "$size\t$system\t$run\tsnapshot_ms\t$ms"; rec "$size\t$system\t$run\tsnapshot_bytes\t$bytes"
      rss=0; for file in "$work"/pid-*; do r=$(rss_kib "$(cat "$file")"); [ "$r" -gt "$rss" ] && rss=$r; done
      rec "$size\t$system\t$run\trss_max_mib\t$((rss >> 10))"
      follower=$(( (leader + 1) % 3 ))
      rec "$size\t$system\t$run\tstart_after_clean_stop_ms\t$(restart_run "$system" "$leader" "$follower" stop)"
      leader=$("${kind}_leader")
      follower=$(( (leader + 2) % 3 ))
      rec "$size\t$system\t$run\tstart_after_kill9_ms\t$(restart_run "$system" "$leader" "$follower" kill)"
      leader=$("${kind}_leader")
      rec "$size\t$system\t$run\tcatch_up_new_server_ms\t$(catch_up_run "$system" "$leader" "$run")"
    done
    if [ "$kind" != etcd ]; then # the longest log sync and persist wait of each server's life (a stalled sync holds its answers)
      for i in 0 1 2; do
        curl -sf "http://127.0.0.1:2450$i/v1/agent/metrics" > "$out/metrics-$label-c$i.json" 2>/dev/null || continue
        for name in raft.fsync.latency raft.persist.wait; do
          python3 -c 'import json, sys
for s in json.load(open(sys.argv[1])).get("Samples", []):
    if s["Name"] == sys.argv[2]: print("%.1f" % s["Max"])' "$out/metrics-$label-c$i.json" "$name" 2>/dev/null \
            | while read -r max; do rec "$size\t$system\tc$i\t${name//./_}_max_ms\t$max"; done
        done
      done
    fi
    read -r maxpause total cpu < <(gc_figures "$label" "$kind")
    rec "$size\t$system\tall\tgc_max_pause_ms\t$maxpause"; rec "$size\t$system\tall\tgc_total_ms\t$total"
    if [ "$kind" != etcd ]; then # the same once loaded: the pauses with the state at its size, restarts included
      rec "$size\t$system\tall\tgc_max_pause_cpu_ms\t$cpu"
      read -r maxpause total cpu < <(gc_figures "$label" "$kind" "$loaded_at")
      rec "$size\t$system\tall\tgc_max_pause_loaded_ms\t$maxpause"; rec "$size\t$system\tall\tgc_max_pause_loaded_cpu_ms\t$cpu"
    fi
    rec "$size\t$system\tall\theap_used_mib\t$(heap_used_mib "$label" "$kind")"
    stop_servers
  done
done

echo
echo "medians over $runs run(s); raw figures in $out/raw.tsv"
awk -F'\t' 'NR > 1 {key = $1 "\t" $2 "\t" $4; v[key] = v[key] " " $5}
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((n + 1) / 2)]
  }
  END { for (key in v) printf "%s\t%s\n", key, median(v[key]) }' "$out/raw.tsv" | sort -t$'\t' -k1,1n -k3,3 -k2,2 | tee "$out/summary.tsv"
