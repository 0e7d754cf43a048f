#!/usr/bin/env bash
# How a server's kernel time per request depends on its own speed: `e2a-floor` under the case-b
# load (E2A JSON echo, 64 connections, the load generator on the other core), with SPIN_US
# microseconds of user CPU burnt per request on top of its work (a loop on the clock: no system
# call, no memory). The system calls per request stay the same; what changes is how often the
# load generator is found idle and has to be woken, which the server pays in its writes.
#
#   bash tools/bench/kernel-share.sh [SPINS="0 6 12 18"] [SECS=4] [ROUNDS=2]
#
# Prints, per SPIN_US, the median over ROUNDS of req/s and the server's user and system CPU
# (µs per request, from /proc/PID/stat). Needs the bench workspace built (`run.sh` does it,
# or `cargo build --release -p e2a-floor -p loadgen` in tools/bench).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SPINS=${1:-0 6 12 18}
SECS=${2:-4}
ROUNDS=${3:-2}
PORT=${PORT:-18960}
BIN=$HERE/target/release
for b in e2a-floor loadgen; do
  [[ -x $BIN/$b ]] || { echo "need $BIN/$b (build the bench workspace)" >&2; exit 2; }
done
SERVER_PIN=(taskset -c 1) LOAD_PIN=(taskset -c 0)
if ! taskset -c 1 true 2>/dev/null || ! taskset -c 0 true 2>/dev/null; then
  echo "note: taskset failed; server and load generator are not pinned" >&2
  SERVER_PIN=() LOAD_PIN=()
fi
HZ=$(getconf CLK_TCK)
BODY=$(mktemp /tmp/e2a-kshare.XXXXXX)
trap 'rm -f "$BODY"; [[ -n ${SP:-} ]] && kill -9 "$SP" 2>/dev/null; true' EXIT
echo '{"method":"chat.send","params":{"query":"hello"}}' > "$BODY"
load() {
  "${LOAD_PIN[@]}" "$BIN/loadgen" --url "http://127.0.0.1:$PORT/v1/e2a/requests" --body "$BODY" \
    -H 'Accept: application/json' -H 'Content-Type: application/json' -c 64 -d "$1" --mode json \
    --expect 'You said: hello'
}
ticks() { sed 's/^.*) //' "/proc/$SP/stat" | awk '{print $12, $13}'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }

echo "| SPIN_US | req/s | user µs/req | system µs/req | total µs/req |"
echo "| --- | --- | --- | --- | --- |"
for spin in $SPINS; do
  "${SERVER_PIN[@]}" "$BIN/e2a-floor" "$PORT" "$spin" 2>/dev/null &
  SP=$!
  for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
  load 1 > /dev/null
  rps=() user=() sys=()
  for _ in $(seq 1 "$ROUNDS"); do
    read -r u0 s0 < <(ticks)
    out=$(load "$SECS")
    read -r u1 s1 < <(ticks)
    n=$(sed -n 's/.*"requests":\([0-9]*\).*/\1/p' <<< "$out")
    errors=$(sed -n 's/.*"errors":\([0-9]*\).*/\1/p' <<< "$out")
    [[ ${errors:-1} == 0 && ${n:-0} -gt 0 ]] || { echo "round failed: $out" >&2; exit 1; }
    rps+=("$(sed -n 's/.*"rps":\([0-9.]*\).*/\1/p' <<< "$out")")
    user+=("$(awk -v d=$((u1 - u0)) -v hz="$HZ" -v n="$n" 'BEGIN{printf "%.1f", d * 1e6 / hz / n}')")
    sys+=("$(awk -v d=$((s1 - s0)) -v hz="$HZ" -v n="$n" 'BEGIN{printf "%.1f", d * 1e6 / hz / n}')")
  done
  kill -TERM "$SP" 2>/dev/null || true
  wait "$SP" 2>/dev/null || true
  SP=
  u=$(printf '%s\n' "${user[@]}" | median)
  s=$(printf '%s\n' "${sys[@]}" | median)
  r=$(printf '%s\n' "${rps[@]}" | median)
  printf '| %s | %.0f | %.1f | %.1f | %.1f |\n' "$spin" "$r" "$u" "$s" "$(awk -v u="$u" -v s="$s" 'BEGIN{print u + s}')"
done
