#!/usr/bin/env bash
# The inspector page (`GET /ui`) of a live `e2a serve` in a real browser: Debian's Chromium,
# headless, driven by playwright-core (npm, pinned in package-lock.json; it downloads no
# browser). The gateway serves the script agent over E2A, A2A and AG-UI behind two callers;
# the page signs in as the operator and watches runs, frames and a pause (inspector.mjs).
# The screenshot is kept at $E2A_INSPECTOR_SHOT (default target/inspector/inspector.png).
# Listens on 127.0.0.1 only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
E="${E2A_BIN:-$root/target/debug/e2a}"
case "$E" in /*) ;; *) E="$root/$E" ;; esac
shot="${E2A_INSPECTOR_SHOT:-$root/target/inspector/inspector.png}"
mkdir -p "$(dirname "$shot")"

if [ ! -x /usr/bin/chromium ]; then
  echo "== install Debian's chromium"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
/usr/bin/chromium --version

cd "$here"
npm ci --no-audit --no-fund --loglevel=error

. "$here/../support/serve.sh"
ops_key="ops-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
alice_key="alice-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf %s "$ops_key" > "$work/ops.key"
printf %s "$alice_key" > "$work/alice.key"
cat > "$work/e2a.toml" <<TOML
agent = "script:$here/script.json"

[store]
url = "memory"

[a2a]
enabled = true

[agui]
enabled = true

[callers.ops]
api_key_file = "ops.key"

[callers.alice]
api_key_file = "alice.key"

[ui]
operators = ["ops"]
TOML
start_server inspector --config "$work/e2a.toml"
base="http://127.0.0.1:$port"
echo "== the inspector page at $base/ui in Chromium"
node inspector.mjs "$base" "$ops_key" "$alice_key" "$shot"
echo "inspector screenshot: $shot"
