#!/usr/bin/env bash
# Checks that the four crates are publishable and e2a usable from outside this workspace:
#   1. the packaged crates hold what they need (e2a: build.rs, schema/*.json, README.md, src/;
#      e2a-gateway: src/, examples/, README.md and not its test suites; e2a-cli: src/);
#   2. `cargo publish --dry-run -p e2a-codegen -p e2a -p e2a-gateway -p e2a-cli`: the crates are
#      packaged in workspace order and each is built from its .crate file alone, against the
#      packaged crates before it (cargo's multi-package publish resolves the local dependencies;
#      none of them is on crates.io). `cargo publish` asks the registry even in a dry run, so with
#      CARGO_NET_OFFLINE=true the same packaging and verification runs as `cargo package`;
#   3. a new crate in a temp dir, outside the workspace, depends on `e2a` by path and builds and
#      runs the README quick start (the first ```rust block of README.md, extracted here so the
#      two cannot drift);
#   4. the `e2a` binary cargo built from the packaged e2a-cli (what `cargo install` of the
#      package gives) checks the README's config file (its first ```toml block) and serves it:
#      the named agents' cards are listed and the README's caller reaches its agent.
# Usage: tools/publish-check.sh   (from anywhere; works offline once the dependencies are fetched)
#        E2A_PUBLISH_CHECK_TARGET=/tmp/e2a-publish-target tools/publish-check.sh   (reuses builds)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/e2a-publish-check.XXXXXX")"
# To verify e2a, cargo unpacks the packaged e2a-codegen from a temporary local registry under the
# target dir into $CARGO_HOME/registry/src/<hash of that registry's path>/. Remove what this run
# added there (directories that hold nothing but the e2a crates, which are not on crates.io).
registry_src="${CARGO_HOME:-$HOME/.cargo}/registry/src"
mkdir -p "$registry_src"
ls -1 "$registry_src" >"$tmp/registry-src.before"
cleanup() {
    local d
    for d in "$registry_src"/*/; do
        d="${d%/}"
        if ! grep -qxF -- "$(basename "$d")" "$tmp/registry-src.before" &&
            [ -z "$(find "$d" -mindepth 1 -maxdepth 1 ! -name 'e2a-*' -print -quit)" ]; then
            rm -rf "$d"
        fi
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

# Builds go to a target dir of their own (the crate outside the workspace shares it), by default
# a fresh one removed at the end. Not the workspace's: cargo fingerprints a registry dependency
# by name and version only, so in a reused target dir the packaged e2a would be verified against
# the e2a-codegen 0.1.0 built by an earlier run (stale build-script output, wrong errors).
# E2A_PUBLISH_CHECK_TARGET=/some/dir keeps one between runs (faster) and forgets e2a's crates
# there first.
if [ -n "${E2A_PUBLISH_CHECK_TARGET:-}" ]; then
    export CARGO_TARGET_DIR="$E2A_PUBLISH_CHECK_TARGET"
    rm -rf "$CARGO_TARGET_DIR/package" "$CARGO_TARGET_DIR"/debug/.fingerprint/e2a-* \
        "$CARGO_TARGET_DIR"/debug/build/e2a-*
else
    export CARGO_TARGET_DIR="$tmp/target"
fi

offline=false
case "${CARGO_NET_OFFLINE:-}" in true | 1 | yes) offline=true ;; esac

# Local edits are what is checked: a clean tree (CI) and a working copy alike.
pkg_flags=(--allow-dirty --locked -p e2a-codegen -p e2a -p e2a-gateway -p e2a-cli)

echo "== publish-check: package contents"
cargo package --list --allow-dirty -p e2a >"$tmp/e2a.list"
cargo package --list --allow-dirty -p e2a-codegen >"$tmp/codegen.list"
need=(Cargo.toml build.rs README.md LICENSE src/lib.rs)
for f in schema/*.json; do need+=("$f"); done
missing=0
for f in "${need[@]}"; do
    if ! grep -qxF "$f" "$tmp/e2a.list"; then
        echo "publish-check: the e2a package lacks $f (build.rs or the docs need it)" >&2
        missing=1
    fi
done
for f in Cargo.toml src/lib.rs; do
    if ! grep -qxF "$f" "$tmp/codegen.list"; then
        echo "publish-check: the e2a-codegen package lacks $f" >&2
        missing=1
    fi
done
cargo package --list --allow-dirty -p e2a-gateway >"$tmp/gateway.list"
cargo package --list --allow-dirty -p e2a-cli >"$tmp/cli.list"
for f in Cargo.toml README.md src/lib.rs examples/axum_mount.rs; do
    if ! grep -qxF "$f" "$tmp/gateway.list"; then
        echo "publish-check: the e2a-gateway package lacks $f" >&2
        missing=1
    fi
done
if grep -q '^tests/' "$tmp/gateway.list"; then
    echo "publish-check: the e2a-gateway package holds its test suites (node_modules, venvs…): see include" >&2
    missing=1
fi
if ! grep -qxF src/main.rs "$tmp/cli.list"; then
    echo "publish-check: the e2a-cli package lacks src/main.rs" >&2
    missing=1
fi
[ "$missing" = 0 ]
echo "e2a: $(wc -l <"$tmp/e2a.list") files (${#need[@]} required present); e2a-codegen: $(wc -l <"$tmp/codegen.list") files;" \
    "e2a-gateway: $(wc -l <"$tmp/gateway.list") files; e2a-cli: $(wc -l <"$tmp/cli.list") files"

if [ "$offline" = true ]; then
    echo "== publish-check: cargo package ${pkg_flags[*]} (offline: publish --dry-run needs the registry)"
    cargo package "${pkg_flags[@]}"
else
    echo "== publish-check: cargo publish --dry-run ${pkg_flags[*]}"
    cargo publish --dry-run "${pkg_flags[@]}"
fi

echo "== publish-check: README quick start in a crate outside the workspace"
crate="$tmp/quickstart"
mkdir -p "$crate/src"
# The first ```rust block; rustdoc's hidden lines (`# code`, `#`) are code too.
snippet="$(awk '
    /^```/ && inblock { exit }
    inblock { print }
    /^```rust([ ,].*)?$/ && !inblock { inblock = 1 }
' README.md | sed -E 's/^([[:space:]]*)# /\1/; s/^[[:space:]]*#$//')"
if [ -z "$snippet" ]; then
    echo "publish-check: no \`\`\`rust block in README.md" >&2
    exit 1
fi
cat >"$crate/Cargo.toml" <<EOF
[package]
name = "e2a-quickstart"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
e2a = { path = "$root" }
serde_json = "1"

# Not a member of any workspace above the temp dir.
[workspace]
EOF
{
    echo '//! The first rust block of e2a'"'"'s README.md, run as a program (tools/publish-check.sh).'
    echo '#![allow(unused)]'
    echo
    echo '/// The value of the snippet: `()` or a `Result` (rustdoc'"'"'s `Ok::<(), E>(())` ending).'
    echo 'trait Outcome {'
    echo '    fn check(self);'
    echo '}'
    echo 'impl Outcome for () {'
    echo '    fn check(self) {}'
    echo '}'
    echo 'impl<E: std::fmt::Debug> Outcome for Result<(), E> {'
    echo '    fn check(self) {'
    echo '        if let Err(e) = self {'
    echo '            panic!("README quick start failed: {e:?}");'
    echo '        }'
    echo '    }'
    echo '}'
    echo
    echo 'fn main() {'
    echo '    let outcome = (|| {'
    printf '%s\n' "$snippet"
    echo '    })();'
    echo '    Outcome::check(outcome);'
    echo '    println!("README quick start: ok");'
    echo '}'
} >"$crate/src/main.rs"
# Start from the workspace's versions (and so work offline with what is already fetched).
cp Cargo.lock "$crate/Cargo.lock"
cargo run --quiet --manifest-path "$crate/Cargo.toml"

echo "== publish-check: the packaged e2a binary serves the README's config file"
bin="$CARGO_TARGET_DIR/debug/e2a"
[ -x "$bin" ] || { echo "publish-check: no e2a binary built from the package at $bin" >&2; exit 1; }
awk '/^```/ && inblock { exit } inblock { print } /^```toml$/ && !inblock { inblock = 1 }' README.md >"$tmp/e2a.toml"
export ALICE_KEY="publish-check-key-of-alice"
"$bin" config check "$tmp/e2a.toml"
"$bin" serve --config "$tmp/e2a.toml" --bind 127.0.0.1:0 >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
base=""
for _ in $(seq 1 100); do
    base="$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.out" 2>/dev/null | head -1 || true)"
    [ -n "$base" ] && break
    sleep 0.1
done
[ -n "$base" ] || { cat "$tmp/serve.err" >&2; kill "$serve_pid"; exit 1; }
cards="$(curl -fsS "$base/a2a/agents")"
answer="$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ALICE_KEY" -H 'Content-Type: application/json' \
    -d '{"method":"chat.send","params":{"query":"hello"}}' "$base/agents/writer/v1/e2a/requests")"
denied="$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ALICE_KEY" -H 'Content-Type: application/json' \
    -d '{"method":"chat.send","params":{"query":"hello"}}' "$base/agents/echo/v1/e2a/requests")"
kill -TERM "$serve_pid"
wait "$serve_pid" || { echo "publish-check: e2a serve did not exit 0 on SIGTERM" >&2; exit 1; }
case "$cards" in *'"Writer"'*) ;; *) echo "publish-check: GET /a2a/agents lacks the Writer card: $cards" >&2; exit 1 ;; esac
[ "$answer" = 200 ] || { echo "publish-check: alice → writer answered $answer" >&2; exit 1; }
[ "$denied" = 403 ] || { echo "publish-check: alice → echo answered $denied, not 403" >&2; exit 1; }
echo "packaged e2a: config check ok; serve --config: cards listed, alice → writer 200, alice → echo 403"

echo "publish-check: ok"
