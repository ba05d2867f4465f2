#!/usr/bin/env bash
# A fleet on this machine: N unmask-server replicas on loopback behind HAProxy, which routes only
# to ready replicas (deploy/haproxy/haproxy.cfg.in). For trying a deployment, and for the tests
# under tests/deploy; deploy/README.md says how to use it.
#
# usage: deploy/local-fleet.sh start [--replicas N] [--port P] [--model DIR] [--server BIN]
#                                    [--threads T] [--config FILE] [--model-name NAME]
#                                    [--replica-connections C] [--state-dir DIR]
#        deploy/local-fleet.sh status [--state-dir DIR]
#        deploy/local-fleet.sh stop [--state-dir DIR]
#
# HAProxy listens on 127.0.0.1:P (default 8080); replica i on P + i. Defaults: 3 replicas, the
# bundled model, build/examples/server/unmask-server, 1 engine thread each, at most 8 requests
# at once per replica (more wait in HAProxy's queue), state in build/fleet.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=fleet-lib.sh
. "$here/fleet-lib.sh"

command=${1:-}
[ $# -gt 0 ] && shift
replicas=3 port=8080 model=$root/models/toolcall-llada-3m server=$root/build/examples/server/unmask-server
threads=1 config="" model_name="" connections=8 state_dir=$root/build/fleet
while [ $# -gt 0 ]; do
  case $1 in
    --replicas) replicas=$2 ;;
    --port) port=$2 ;;
    --model) model=$2 ;;
    --server) server=$2 ;;
    --threads) threads=$2 ;;
    --config) config=$2 ;;
    --model-name) model_name=$2 ;;
    --replica-connections) connections=$2 ;;
    --state-dir) state_dir=$2 ;;
    *) fleet_die "unknown option '$1' (see the usage at the top of this script)" ;;
  esac
  shift 2 || fleet_die "$1 needs a value"
done

start() {
  command -v haproxy >/dev/null || fleet_die "haproxy is not installed (apt-get install haproxy)"
  [ -x "$server" ] || fleet_die "no unmask-server at $server (build it, or pass --server)"
  [ -e "$model" ] || fleet_die "no model at $model"
  [ -z "$config" ] || [ -f "$config" ] || fleet_die "no configuration file at $config"
  [[ $replicas =~ ^[1-9][0-9]?$ ]] || fleet_die "--replicas must be 1 to 99, got '$replicas'"
  [ -f "$state_dir/haproxy.pid" ] && fleet_alive "$state_dir/haproxy.pid" && fleet_die "a fleet already runs from $state_dir"
  mkdir -p "$state_dir"
  rm -f "$state_dir"/replica-* "$state_dir"/haproxy.*
  # A start that fails leaves nothing running.
  trap 'for f in "$state_dir"/replica-*.pid "$state_dir"/haproxy.pid; do fleet_alive "$f" && kill -KILL "$(cat "$f")"; done' EXIT
  model=$(realpath "$model")
  server=$(realpath "$server")
  [ -n "$config" ] && config=$(realpath "$config")
  cat >"$state_dir/fleet.conf" <<CONF
fleet_port=$port
fleet_threads=$threads
fleet_config=$config
fleet_model_name=${model_name:-$(basename "$model")}
CONF
  fleet_load_conf
  for ((i = 1; i <= replicas; ++i)); do
    echo $((port + i)) >"$state_dir/replica-$i.port"
    echo "$model" >"$state_dir/replica-$i.model"
    echo "$server" >"$state_dir/replica-$i.server"
    fleet_start_replica "$i"
  done
  for ((i = 1; i <= replicas; ++i)); do
    fleet_wait_ready "$i" 120 || fleet_die "replica $i did not become ready (see $state_dir/replica-$i.log)"
  done
  sed -e "s|@STATE_DIR@|$state_dir|g" -e "s|@BIND@|127.0.0.1|g" -e "s|@PORT@|$port|g" \
      -e "s|@REPLICA_CONNECTIONS@|$connections|g" "$here/haproxy/haproxy.cfg.in" >"$state_dir/haproxy.cfg"
  for ((i = 1; i <= replicas; ++i)); do
    echo "    server replica-$i 127.0.0.1:$(fleet_get "$i" port)" >>"$state_dir/haproxy.cfg"
  done
  haproxy -c -q -f "$state_dir/haproxy.cfg" || fleet_die "HAProxy refused $state_dir/haproxy.cfg"
  haproxy -D -f "$state_dir/haproxy.cfg" -p "$state_dir/haproxy.pid"
  local deadline=$((SECONDS + 30))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/v1/models")" = 200 ]; do
    [ $SECONDS -lt $deadline ] || fleet_die "HAProxy does not route to the replicas on port $port"
    sleep 0.2
  done
  trap - EXIT
  echo "fleet: $replicas replica(s) of $(basename "$model") behind http://127.0.0.1:$port (state in $state_dir)"
}

status() {
  fleet_load_conf
  local code=0
  if fleet_alive "$state_dir/haproxy.pid"; then echo "haproxy   http://127.0.0.1:$fleet_port  running"
  else echo "haproxy   not running"; code=1; fi
  for i in $(fleet_replicas); do
    local alive=stopped haproxy_view=-
    fleet_alive "$state_dir/replica-$i.pid" && alive="pid $(cat "$state_dir/replica-$i.pid")"
    fleet_alive "$state_dir/haproxy.pid" && haproxy_view=$(fleet_haproxy_state "$i")
    printf 'replica-%s port %s  %-10s readyz %s  haproxy %s  model %s\n' "$i" "$(fleet_get "$i" port)" "$alive" \
      "$(fleet_readyz "$(fleet_get "$i" port)")" "$haproxy_view" "$(fleet_get "$i" model)"
    [ "$haproxy_view" = UP ] || code=1
  done
  return $code
}

stop() {
  fleet_load_conf
  if fleet_alive "$state_dir/haproxy.pid"; then kill -TERM "$(cat "$state_dir/haproxy.pid")"; fi
  for i in $(fleet_replicas); do fleet_stop_replica "$i" 60 & done
  wait
  rm -f "$state_dir/haproxy.pid"
  echo "fleet stopped"
}

case $command in
  start) start ;;
  status) status ;;
  stop) stop ;;
  *) fleet_die "usage: $0 start|status|stop [options]" ;;
esac
