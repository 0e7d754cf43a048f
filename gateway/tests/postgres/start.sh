#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on loopback for the multi-gateway tests and prints its
# URL (postgres://e2a@127.0.0.1:PORT/postgres) on stdout; everything else goes to stderr.
#
#   url=$(gateway/tests/postgres/start.sh DIR [PORT])   # data, socket and log under DIR
#   gateway/tests/postgres/stop.sh DIR
#
# The server comes from Debian's `postgresql` package: its binaries are used where they are,
# and installed with apt-get when missing. initdb refuses to run as root, so as root the
# server runs as the `postgres` user the package creates. Authentication is `trust`, and the
# server listens on 127.0.0.1 only. With openssl on the machine the server also speaks TLS, with
# a certificate for 127.0.0.1 signed by a throwaway CA in DIR/ca.crt (what clients pass as
# their CA): the tests connect over TLS and verify it.
set -euo pipefail
dir=${1:?usage: start.sh DIR [PORT]}
port=${2:-54329}

find_bin() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
    return 1
}

bin=$(find_bin || true)
if [ -z "$bin" ]; then
    echo "postgres: installing Debian's postgresql package" >&2
    export DEBIAN_FRONTEND=noninteractive
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq >&2
    $sudo apt-get install -y -qq --no-install-recommends postgresql >&2
    bin=$(find_bin)
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tls=()
if command -v openssl >/dev/null 2>&1; then
    if [ ! -f "$dir/server.crt" ]; then
        # a throwaway CA, and the server's certificate for 127.0.0.1 signed by it
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=e2a test CA" \
            -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
            -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$dir/server.ext"
        openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
            -days 2 -extfile "$dir/server.ext" -out "$dir/server.crt" 2>/dev/null
        chmod 600 "$dir/server.key" "$dir/ca.key"
    fi
    tls=(-c ssl=on -c "ssl_cert_file=$dir/server.crt" -c "ssl_key_file=$dir/server.key")
fi
run=()
if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown -R postgres "$dir"
    run=(runuser -u postgres --)
fi
if [ ! -f "$dir/data/PG_VERSION" ]; then
    "${run[@]}" "$bin/initdb" -D "$dir/data" -U e2a --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
fi
"${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300 -c fsync=off -c synchronous_commit=off ${tls[*]}" >&2 \
    || { cat "$dir/server.log" >&2; exit 1; }
echo "postgres://e2a@127.0.0.1:$port/postgres"
