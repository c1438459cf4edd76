# Shared by the benchmark scripts (sourced, not run): the child processes they start and stop, waiting for a condition,
# a static three-server Conclave cluster on loopback, and the figures of a wrk report. A script that sources it sets
# "pids=()" and traps EXIT with stop_all.

# Stops every process in pids (started with "&" and "pids+=($!)") and waits for each.
stop_all() {
  for pid in "${pids[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]:-}"; do [ -n "$pid" ] && wait "$pid" 2>/dev/null || true; done
  pids=()
}

wait_for() { # seconds, command...
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { echo "timed out waiting for: $*" >&2; return 1; }
    sleep 0.2
  done
}

load_average() { cut -d' ' -f1 /proc/loadavg; }

# Starts three Conclave servers of the distribution dist, bootstrapped together from a static server list: server i
# (0-2) on Raft port server_base + i and HTTP port http_base + i, its data in work/c<i>, its output in log_prefix<i>.log;
# no gossip (serf_lan 0), no DNS. JAVA_OPTS and EXTRA_JAVA_OPTS are passed to each.
conclave_start() { # dist work log_prefix server_base http_base
  local dist=$1 work=$2 log_prefix=$3 server_base=$4 http_base=$5
  for i in 0 1 2; do
    cat > "$work/c$i.json" <<JSON
{"node_name": "c$i", "server": true, "data_dir": "$work/c$i", "bootstrap_expect": 3,
 "static_servers": ["127.0.0.1:$server_base", "127.0.0.1:$((server_base + 1))", "127.0.0.1:$((server_base + 2))"],
 "ports": {"http": $((http_base + i)), "server": $((server_base + i)), "serf_lan": 0, "dns": -1}}
JSON
    JAVA_OPTS="${JAVA_OPTS:-} ${EXTRA_JAVA_OPTS:-}" "$dist/bin/conclave" agent -config-file "$work/c$i.json" \
      > "$log_prefix$i.log" 2>&1 &
    pids+=($!)
  done
}

# The Raft state (Leader, Follower, Candidate...) the server at 127.0.0.1:http_port reports; fails if it does not answer.
conclave_state() { # http_port
  curl -sf "http://127.0.0.1:$1/v1/agent/self" | sed -n 's/.*"state" : "\([A-Za-z]*\)".*/\1/p'
}

# Prints the address of the one leader among the servers at HTTP ports http_base to http_base + 2; fails if none leads.
conclave_leader_at() { # http_base
  for i in 0 1 2; do
    if [ "$(conclave_state $(($1 + i)) || true)" = Leader ]; then echo "127.0.0.1:$(($1 + i))"; return 0; fi
  done
  return 1
}

# A wrk report's figures: "requests/s p50 p99 errors answered" (errors: non-2xx answers and socket errors).
wrk_figures() { # report
  local rate p50 p99 errors answered
  rate=$(awk '/^Requests\/sec/ {print $2}' "$1")
  p50=$(awk '$1 == "50%" {print $2}' "$1")
  p99=$(awk '$1 == "99%" {print $2}' "$1")
  errors=$(awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}' "$1")
  answered=$(awk '/requests in/ {print $1}' "$1")
  echo "$rate $p50 $p99 $errors $answered"
}
