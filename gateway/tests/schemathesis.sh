#!/usr/bin/env bash
# Schemathesis against a live `e2a serve`, generated from generated/openapi.json: every
# operation, every check (no 5xx; each response conforms to its documented status code, media
# type, headers and schema; auth is not ignored; undocumented methods get 405), positive and
# negative data, a bounded number of examples and a fixed seed. Exits non-zero on any failure.
#
#   gateway/tests/schemathesis.sh            # uses .venv/bin/schemathesis (cargo xtask setup)
#   SCHEMATHESIS=/path/to/schemathesis MAX_EXAMPLES=200 gateway/tests/schemathesis.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

root=$(pwd)
st=$(realpath "${SCHEMATHESIS:-.venv/bin/schemathesis}")
max_examples=${MAX_EXAMPLES:-50}
seed=${SEED:-20261130}

cargo build --locked -q -p e2a-cli

work=$(mktemp -d)
pid=
cleanup() {
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

token=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
(umask 077 && printf '%s\n' "$token" >"$work/token")

target/debug/e2a serve --bind 127.0.0.1:0 --token-file "$work/token" --agent echo \
    >"$work/stdout" 2>"$work/stderr" &
pid=$!
base=
for _ in $(seq 100); do
    base=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/stdout" | head -n1 || true)
    [ -n "$base" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/stderr" >&2; exit 1; }
    sleep 0.1
done
[ -n "$base" ] || { echo "e2a serve did not start" >&2; exit 1; }
echo "schemathesis: e2a serve at $base (pid $pid)"

# run from the scratch directory: schemathesis keeps a crash cache in its working directory
cd "$work"
"$st" run "$root/generated/openapi.json" \
    --url "$base" \
    --header "Authorization: Bearer $token" \
    --checks all \
    --mode all \
    --max-examples "$max_examples" \
    --seed "$seed" \
    --generation-database none \
    --request-timeout 10 \
    --workers 1 \
    --no-color
