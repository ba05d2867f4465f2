#!/usr/bin/env bash
# Restarts the replicas of a local fleet (deploy/local-fleet.sh) one at a time, with a new model
# directory or server binary or the same ones, without failing a request: each replica is drained
# (HAProxy first stops sending it new requests, then SIGTERM: its readiness turns 503, the requests
# it runs finish, it exits), restarted, checked with a smoke request, and back in HAProxy before the
# next one goes. If a restarted replica does not become ready or fails the
# smoke request, every replica restarted so far goes back to its previous model and binary, the
# script says so and exits 1; the fleet keeps serving throughout.
#
# usage: deploy/rolling-restart.sh [--model DIR] [--server BIN] [--state-dir DIR]
#                                  [--ready-timeout S] [--drain-timeout S]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=fleet-lib.sh
. "$here/fleet-lib.sh"

state_dir=$root/build/fleet new_model="" new_server="" ready_timeout=120 drain_timeout=60
while [ $# -gt 0 ]; do
  case $1 in
    --model) new_model=$2 ;;
    --server) new_server=$2 ;;
    --state-dir) state_dir=$2 ;;
    --ready-timeout) ready_timeout=$2 ;;
    --drain-timeout) drain_timeout=$2 ;;
    *) fleet_die "unknown option '$1' (see the usage at the top of this script)" ;;
  esac
  shift 2 || fleet_die "$1 needs a value"
done
fleet_load_conf
fleet_alive "$state_dir/haproxy.pid" || fleet_die "HAProxy of the fleet in $state_dir is not running"
if [ -n "$new_model" ]; then
  [ -e "$new_model" ] || fleet_die "no model at $new_model"
  new_model=$(realpath "$new_model")
fi
if [ -n "$new_server" ]; then
  [ -x "$new_server" ] || fleet_die "no executable unmask-server at $new_server"
  new_server=$(realpath "$new_server")
fi

say() { echo "rolling-restart: $*"; }

# wait_haproxy i STATE seconds: until HAProxy's view of replica i is STATE.
wait_haproxy() {
  local deadline=$((SECONDS + $3))
  until [ "$(fleet_haproxy_state "$1")" = "$2" ]; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

# smoke i: one short chat completion straight to replica i; 0 when it answers 200 with content.
smoke() {
  local body
  body=$(curl -s --max-time 60 -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"Set a timer for 5 minutes for the tea."}],"max_tokens":16}' \
    "http://127.0.0.1:$(fleet_get "$1" port)/v1/chat/completions") || return 1
  python3 -c 'import json, sys; b = json.loads(sys.argv[1]); sys.exit(0 if b["choices"][0]["message"]["content"] else 1)' \
    "$body" 2>/dev/null
}

# restart i MODEL SERVER: drains replica i, starts it on MODEL with SERVER, checks it; 0 when it
# serves and HAProxy routes to it again.
restart() {
  local i=$1
  # HAProxy's drain state first: no new request goes to the replica, so none can reach it in the
  # moment between the end of its own drain and HAProxy's health checks noticing (a connection
  # accepted then closed unanswered would be a 502, which is not retried).
  fleet_haproxy "set server replicas/replica-$i state drain" >/dev/null
  wait_haproxy "$i" DRAIN 10 || say "replica-$i: HAProxy shows $(fleet_haproxy_state "$i"), not DRAIN"
  fleet_stop_replica "$i" "$drain_timeout"
  fleet_haproxy "set server replicas/replica-$i state ready" >/dev/null  # routed again once its checks pass
  echo "$2" >"$state_dir/replica-$i.model"
  echo "$3" >"$state_dir/replica-$i.server"
  fleet_start_replica "$i"
  if ! fleet_wait_ready "$i" "$ready_timeout"; then
    say "replica-$i did not become ready on $2 (its log: $state_dir/replica-$i.log)"
    return 1
  fi
  if ! smoke "$i"; then
    say "replica-$i failed its smoke request on $2"
    return 1
  fi
  wait_haproxy "$i" UP 30 || { say "HAProxy did not take replica-$i back"; return 1; }
}

done_list=()
declare -A old_model old_server
for i in $(fleet_replicas); do
  old_model[$i]=$(fleet_get "$i" model)
  old_server[$i]=$(fleet_get "$i" server)
  model=${new_model:-${old_model[$i]}} server=${new_server:-${old_server[$i]}}
  say "replica-$i: draining, then $(basename "$model") with $(basename "$server")"
  done_list+=("$i")
  if ! restart "$i" "$model" "$server"; then
    say "rolling back replica(s) ${done_list[*]} to their previous model and binary"
    for j in "${done_list[@]}"; do
      restart "$j" "${old_model[$j]}" "${old_server[$j]}" || fleet_die "replica-$j did not come back on its previous version"
      say "replica-$j: back on $(basename "${old_model[$j]}")"
    done
    exit 1
  fi
  say "replica-$i: ready and routed"
done
say "every replica restarted"
