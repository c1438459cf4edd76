#!/bin/sh
# A local Conclave cluster from the built distribution zip, and a leader's leave, watched.
#
#   sh examples/cluster/run.sh [-servers 3|5] [-port-base N] [-keep]
#
# Builds nothing: it unpacks distribution/target/conclave-*.zip (run `mvn -B package -DskipTests` first) into a
# temporary folder, starts 3 servers (5 with -servers 5) on 127.0.0.1 with gossip, each with its own data folder,
# configuration and ports (HTTP N+500+i, server N+300+i, gossip N+400+i, DNS N+600+i; N is -port-base, 18000 by default), waits
# for a leader, writes keys through one server, lists the members, exports, deletes and imports the keys, makes a
# follower and then the leader leave, and prints before and after each the leader, the term and the elections each
# server started. Then it stops every server it started, by its PID (with -keep it
# leaves them running and says how to stop them). Everything it made stays in the folder it names.
set -eu

servers=3
port_base=18000
keep=false
while [ $# -gt 0 ]; do
  case $1 in
    -servers) servers=${2:-}; shift 2 ;;
    -servers=*) servers=${1#*=}; shift ;;
    -port-base) port_base=${2:-}; shift 2 ;;
    -port-base=*) port_base=${1#*=}; shift ;;
    -keep) keep=true; shift ;;
    -h | -help | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see -help)" >&2; exit 2 ;;
  esac
done
case $servers in 3 | 5) ;; *) echo "run.sh: -servers must be 3 or 5, not '$servers'" >&2; exit 2 ;; esac
case $port_base in '' | *[!0-9]*) echo "run.sh: -port-base must be a number, not '$port_base'" >&2; exit 2 ;; esac
if [ "$port_base" -lt 1024 ] || [ "$port_base" -gt 64000 ]; then
  echo "run.sh: -port-base must be between 1024 and 64000" >&2; exit 2
fi

here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/../.." && pwd -P)
zip=
for candidate in "$root"/distribution/target/conclave-*.zip; do
  [ -f "$candidate" ] && zip=$candidate
done
if [ -z "$zip" ]; then
  echo "run.sh: no distribution zip in $root/distribution/target: build it first with 'mvn -B package -DskipTests'" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/conclave-example.XXXXXX")
if command -v unzip >/dev/null 2>&1; then
  unzip -q "$zip" -d "$work"
else
  (cd "$work" && jar xf "$zip") # the JDK's jar reads zips too
fi
dist=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'conclave-*' | head -n 1)
echo "Conclave example cluster: $servers servers from $(basename "$zip"), in $work"

pids=
cleanup() {
  status=$?
  if [ "$keep" = true ]; then
    [ -n "$pids" ] && echo "left running (-keep): PIDs$pids; stop them with: kill$pids"
    exit $status
  fi
  if [ -n "$pids" ]; then
    echo "stopping the servers it started: PIDs$pids"
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    for pid in $pids; do
      i=0
      while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
      kill -9 "$pid" 2>/dev/null || true
    done
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the command line of the unpacked distribution; client commands start fast with the C1 compiler only
conclave() {
  JAVA_OPTS="-XX:TieredStopAtLevel=1 -Xmx64m" sh "$dist/bin/conclave" "$@"
}
http_of() { echo $((port_base + 500 + $1)); }
tab=$(printf '\t')
# info I: `conclave info` of server I (empty when it does not answer); field TEXT KEY: a value of it, or "-"
info() {
  conclave info -http-addr "127.0.0.1:$(http_of "$1")" 2>/dev/null || true
}
field() {
  value=$(printf '%s\n' "$1" | sed -n "s/^${tab}$2 = //p")
  echo "${value:--}"
}
# stat I KEY: one value of server I's info
stat() {
  field "$(info "$1")" "$2"
}

join=
i=0
while [ $i -lt "$servers" ]; do
  join="$join${join:+, }\"127.0.0.1:$((port_base + 400 + i))\""
  i=$((i + 1))
done

i=0
while [ $i -lt "$servers" ]; do
  mkdir -p "$work/s$i/data"
  cat > "$work/s$i/server.json" <<EOF
{
  "node_name": "s$i",
  "server": true,
  "datacenter": "dc1",
  "data_dir": "$work/s$i/data",
  "bind_addr": "127.0.0.1",
  "client_addr": "127.0.0.1",
  "bootstrap_expect": $servers,
  "retry_join": [$join],
  "ports": {"http": $((port_base + 500 + i)), "server": $((port_base + 300 + i)), "serf_lan": $((port_base + 400 + i)), "dns": $((port_base + 600 + i))},
  "leave_drain_time": "1s",
  "autopilot": {"server_stabilization_time": "2s"},
  "ui_config": {"enabled": true}
}
EOF
  JAVA_OPTS="-Xmx256m" sh "$dist/bin/conclave" agent -config-file "$work/s$i/server.json" > "$work/s$i/agent.log" 2>&1 &
  pids="$pids $!"
  echo "started s$i (PID $!): HTTP 127.0.0.1:$(http_of $i) (web UI: http://127.0.0.1:$(http_of $i)/ui/), log $work/s$i/agent.log"
  i=$((i + 1))
done

# leader IDX of the server that leads, polled for up to 90 s
find_leader() {
  deadline=$(($(date +%s) + 90))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    i=0
    while [ $i -lt "$servers" ]; do
      if [ "$(stat $i state)" = Leader ]; then
        echo $i
        return 0
      fi
      i=$((i + 1))
    done
    for pid in $pids; do
      if ! kill -0 "$pid" 2>/dev/null; then
        echo "run.sh: a server stopped (PID $pid); its log is in $work/s*/agent.log:" >&2
        tail -n 5 "$work"/s*/agent.log >&2
        return 1
      fi
    done
    sleep 0.5
  done
  echo "run.sh: no leader within 90 s; the logs are in $work/s*/agent.log" >&2
  return 1
}

show() {
  printf '  %-8s %-10s %-6s %s\n' server state term elections_started
  i=0
  while [ $i -lt "$servers" ]; do
    text=$(info $i)
    printf '  %-8s %-10s %-6s %s\n' "s$i" "$(field "$text" state)" "$(field "$text" term)" "$(field "$text" elections_started)"
    i=$((i + 1))
  done
}

echo "waiting for a leader..."
leader=$(find_leader)
echo "s$leader leads, in term $(stat "$leader" term)"

through=$(( (leader + 1) % servers ))
echo "writing 5 keys through s$through (a follower forwards them to the leader):"
k=1
while [ $k -le 5 ]; do
  conclave kv put -http-addr "127.0.0.1:$(http_of $through)" "example/key-$k" "value-$k" | sed 's/^/  /'
  k=$((k + 1))
done
echo "read back through s$leader:"
conclave kv get -recurse -http-addr "127.0.0.1:$(http_of "$leader")" example/ | sed 's/^/  /'

echo "the members, as gossip sees them:"
conclave members -http-addr "127.0.0.1:$(http_of "$leader")" | sed 's/^/  /'

echo "export, delete, import (Consul's JSON):"
conclave kv export -http-addr "127.0.0.1:$(http_of $through)" example/ > "$work/export.json"
conclave kv delete -recurse -http-addr "127.0.0.1:$(http_of $through)" example/ | sed 's/^/  /'
conclave kv import -http-addr "127.0.0.1:$(http_of $through)" "@$work/export.json" | sed 's/^/  /'

# elections I...: the elections the servers listed started, summed
elections() {
  sum=0
  for server in "$@"; do
    value=$(stat "$server" elections_started)
    [ "$value" = - ] || sum=$((sum + value))
  done
  echo $sum
}

follower=$(( (leader + 2) % servers ))
stay=
i=0
while [ $i -lt "$servers" ]; do
  [ $i -ne "$follower" ] && stay="$stay $i"
  i=$((i + 1))
done
echo "before a follower's leave:"
show
# shellcheck disable=SC2086
follower_elections_before=$(elections $stay)
follower_term_before=$(stat "$leader" term)
echo "s$follower (a follower) leaves:"
conclave leave -http-addr "127.0.0.1:$(http_of "$follower")" | sed 's/^/  /'
sleep 1
# shellcheck disable=SC2086
echo "a follower's leave: the term was $follower_term_before and is $(stat "$leader" term); elections started by the others: $follower_elections_before before, $(elections $stay) after"

echo "before the leader's leave:"
show
term_before=$(stat "$through" term)
echo "s$leader (the leader) leaves: it hands leadership over, announces its leave, is removed, stops its Raft, exits"
conclave leave -http-addr "127.0.0.1:$(http_of "$leader")" | sed 's/^/  /'
sleep 1
echo "after:"
show
term_after=$(stat "$through" term)
campaigns=$(sed -n '/leaving the cluster/,$p' "$work/s$leader/agent.log" | grep -c 'role CANDIDATE\|role PRE_CANDIDATE' || true)
echo "the term went from $term_before to $term_after on the servers that stay (one election, the transfer target's);"
echo "after its leave, s$leader campaigned $campaigns times (its log: $work/s$leader/agent.log)"
echo "the Raft configuration now:"
conclave operator raft list-peers -http-addr "127.0.0.1:$(http_of $through)" | sed 's/^/  /'
count=$(conclave kv list -http-addr "127.0.0.1:$(http_of $through)" example/ | wc -l | tr -d ' ')
echo "keys still there: $count of 5"
