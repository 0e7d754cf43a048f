# Shared by the shell suites that run `e2a serve` (sourced, with $E set to the e2a binary): a
# throwaway directory $work, the servers started and stopped at exit, free loopback ports.
# Servers listen on 127.0.0.1 only.
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_server NAME ARGS… : runs `e2a serve --bind 127.0.0.1:PORT ARGS…` in $SERVE_DIR (default:
# here), its output in $work/NAME.log, and waits until it answers /healthz; sets $port.
start_server() {
  local name=$1
  shift
  port=$(free_port)
  (cd "${SERVE_DIR:-.}" && exec "$E" serve --bind "127.0.0.1:$port" "$@") >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server $name did not start:"
  cat "$work/$name.log"
  return 1
}
