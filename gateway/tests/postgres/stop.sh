#!/usr/bin/env bash
# Stops the server gateway/tests/postgres/start.sh DIR started.
set -euo pipefail
dir=$(cd "${1:?usage: stop.sh DIR}" && pwd)
bin=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do [ -x "$d/pg_ctl" ] && { bin=$d; break; }; done
[ -z "$bin" ] && bin=$(dirname "$(command -v pg_ctl)")
run=()
[ "$(id -u)" -eq 0 ] && run=(runuser -u postgres --)
"${run[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
