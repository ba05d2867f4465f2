# Shared by deploy/local-fleet.sh and deploy/rolling-restart.sh: where a local fleet keeps its
# state, and how a replica is started, probed and stopped. Sourced, not run.
#
# The state directory holds, per replica i (1..N): replica-i.port, .pid, .log, .model (the model
# directory it serves) and .server (the unmask-server binary it runs); and haproxy.cfg,
# haproxy.pid, haproxy.sock, fleet.conf (the start options).

fleet_die() { echo "$(basename "$0"): $*" >&2; exit 1; }

# fleet_get i key: a replica's recorded value.
fleet_get() { cat "$state_dir/replica-$1.$2"; }

fleet_replicas() { ls "$state_dir"/replica-*.port 2>/dev/null | sed 's/.*replica-\([0-9]*\)\.port/\1/' | sort -n; }

fleet_alive() { local pid; pid=$(cat "$1" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; }

# fleet_readyz port: the replica's readiness status code (000 when it does not answer).
fleet_readyz() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/readyz" || true; }

# fleet_start_replica i: starts replica i with its recorded server, model and port.
fleet_start_replica() {
  local i=$1 extra=()
  [ -n "${fleet_config:-}" ] && extra+=(--config "$fleet_config")
  nohup "$(fleet_get "$i" server)" --model "$(fleet_get "$i" model)" --host 127.0.0.1 \
    --port "$(fleet_get "$i" port)" --threads "$fleet_threads" --model-name "$fleet_model_name" \
    --log-file "$state_dir/replica-$i.log" "${extra[@]}" >>"$state_dir/replica-$i.out" 2>&1 &
  echo $! >"$state_dir/replica-$i.pid"
}

# fleet_wait_ready i seconds: 0 once replica i answers /readyz with 200, 1 if it exits or the time passes.
fleet_wait_ready() {
  local i=$1 deadline=$((SECONDS + $2))
  while [ $SECONDS -lt $deadline ]; do
    fleet_alive "$state_dir/replica-$i.pid" || return 1
    [ "$(fleet_readyz "$(fleet_get "$i" port)")" = 200 ] && return 0
    sleep 0.2
  done
  return 1
}

# fleet_stop_replica i seconds: SIGTERM (the server drains), then SIGKILL after `seconds`.
fleet_stop_replica() {
  local pidfile="$state_dir/replica-$1.pid" deadline=$((SECONDS + $2)) pid
  pid=$(cat "$pidfile" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then kill -KILL "$pid" 2>/dev/null; break; fi
    sleep 0.1
  done
  wait "$pid" 2>/dev/null || true
}

# fleet_haproxy COMMAND: a command on HAProxy's admin socket (its answer on stdout).
fleet_haproxy() {
  python3 - "$state_dir/haproxy.sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
out = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    out += chunk
sys.stdout.write(out.decode())
PY
}

# fleet_haproxy_state i: HAProxy's view of replica i: UP, DOWN, MAINT, ... (its `show stat` status).
fleet_haproxy_state() {
  fleet_haproxy "show stat" | awk -F, -v name="replica-$1" '$1 == "replicas" && $2 == name { print $18 }'
}

fleet_load_conf() {
  [ -f "$state_dir/fleet.conf" ] || fleet_die "no fleet in $state_dir (deploy/local-fleet.sh start)"
  # shellcheck disable=SC1091
  . "$state_dir/fleet.conf"
}
