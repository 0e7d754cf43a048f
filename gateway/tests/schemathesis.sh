#!/usr/bin/env bash
# Schemathesis against a live `e2a serve --a2a --store memory`, generated from
# generated/openapi.json: every operation (E2A over HTTP and A2A's HTTP+JSON binding), every
# check (schemathesis's default: all of them — no 5xx; each response conforms to its documented
# status code, media type, headers and schema, SSE events included; auth is not ignored;
# undocumented methods get 405; valid data is accepted and invalid data refused), positive and
# negative data, a bounded number of examples and a fixed seed. Exits non-zero on any failure.
#
# gateway/tests/schemathesis.toml holds the few answers a check cannot know are right;
# gateway/tests/schemathesis_hooks.py what a generated request cannot know (unique message ids,
# a webhook the gateway may call: the local sink below, on 127.0.0.1).
#
#   gateway/tests/schemathesis.sh            # uses .venv/bin/schemathesis (cargo xtask setup)
#   SCHEMATHESIS=/path/to/schemathesis MAX_EXAMPLES=200 gateway/tests/schemathesis.sh
#   E2A_BIN=target/debug/e2a gateway/tests/schemathesis.sh   # an e2a already built (no cargo build)
set -euo pipefail
cd "$(dirname "$0")/../.."

root=$(pwd)
st=$(realpath "${SCHEMATHESIS:-.venv/bin/schemathesis}")
max_examples=${MAX_EXAMPLES:-50}
seed=${SEED:-20261130}

if [ -z "${E2A_BIN:-}" ]; then
    cargo build --locked -q -p e2a-cli
    E2A_BIN="${CARGO_TARGET_DIR:-target}/debug/e2a"
fi

work=$(mktemp -d)
pid=
sink=
cleanup() {
    for p in $pid $sink; do
        kill -TERM "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

token=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
(umask 077 && printf '%s\n' "$token" >"$work/token")

# the webhook of the push notification configs schemathesis creates: answers every POST with 200
python3 -u - >"$work/sink" 2>"$work/sink.err" <<'PY' &
import http.server
class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(f"http://127.0.0.1:{server.server_address[1]}/hook", flush=True)
server.serve_forever()
PY
sink=$!

# metrics on (a config key only), AG-UI on: every route of the document is served
printf '[metrics]\nenabled = true\n' >"$work/e2a.toml"
"$E2A_BIN" serve --config "$work/e2a.toml" --bind 127.0.0.1:0 --token-file "$work/token" --agent echo \
    --a2a --store memory --push-allow-private --agui \
    >"$work/stdout" 2>"$work/stderr" &
pid=$!
base=
hook=
for _ in $(seq 100); do
    base=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/stdout" | head -n1 || true)
    hook=$(head -n1 "$work/sink" || true)
    [ -n "$base" ] && [ -n "$hook" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/stderr" >&2; exit 1; }
    kill -0 "$sink" 2>/dev/null || { cat "$work/sink.err" >&2; exit 1; }
    sleep 0.1
done
[ -n "$base" ] || { echo "e2a serve did not start" >&2; exit 1; }
[ -n "$hook" ] || { echo "the webhook sink did not start" >&2; exit 1; }
echo "schemathesis: e2a serve at $base (pid $pid), webhook sink at $hook"

# run from the scratch directory: schemathesis keeps a crash cache in its working directory
cd "$work"
E2A_PUSH_SINK="$hook" SCHEMATHESIS_HOOKS="$root/gateway/tests/schemathesis_hooks.py" \
"$st" --config-file "$root/gateway/tests/schemathesis.toml" run "$root/generated/openapi.json" \
    --url "$base" \
    --header "Authorization: Bearer $token" \
    --mode all \
    --max-examples "$max_examples" \
    --seed "$seed" \
    --generation-database none \
    --request-timeout 10 \
    --workers 1 \
    --no-color
