#!/usr/bin/env python3
"""Runs the examples of README.md and gateway/README.md, as a newcomer would, with the `e2a` on
PATH (`cargo install --path cli`). A doc example that fails fails this script.

Every fenced block of kind sh, python, toml or json is preceded by a marker comment saying what
it is (a block without one fails: an example is run, or says why not):

  <!-- example: run [; against: COMMAND] [; files: NAME[=SOURCE] …] -->
      sh: run by bash -eo pipefail (python: by the client venv's python), in a scratch
      directory whose top-level entries link to the repository's (so `gateway/tests/...`
      paths work and nothing is written to the checkout); `against:` first starts the gateway
      COMMAND (stopping the one before) and waits for it (`against: none` stops it: the block
      starts its own); whatever the block starts in the background is stopped when it ends.
  <!-- example: serve [; files: …] -->
      each `e2a serve …` line is started (stopping the one before) and must print its banner;
      the other lines run against it.
  <!-- example: config [; files: …] -->
      the TOML is written to e2a.toml in the scratch directory and `e2a config check` must pass
      (the environment variables it names are set to placeholders).
  <!-- example: script -->   the JSON is a script: `e2a serve --agent script:FILE` must start.
  <!-- example: skip — REASON -->

Every server listens on loopback: `--bind 0.0.0.0:PORT` is started on 127.0.0.1:PORT.
`files:` makes files in the scratch directory before the block: `NAME` a placeholder line,
`NAME=path/in/repo` a copy, `NAME=@jwks` a JWKS of a fresh RSA key. `cargo run -q -p e2a-cli --`
in a block means `e2a`. rust blocks are doctests (cargo test runs them), text blocks drawings.

usage: tools/examples/run.py [--python PYTHON] [FILE …]
"""

import argparse
import base64
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FILES = ["README.md", "gateway/README.md"]
MARKER = re.compile(r"^<!--\s*example:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(\S*)")
EXEMPT = {"rust": "a doctest", "rust,no_run": "a doctest", "text": "a drawing"}
CARGO_RUN = "cargo run -q -p e2a-cli --"
PORT = 8080


def blocks(path):
    """(line, kind, marker, text) of every fenced block of `path`."""
    lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = MARKER.match(lines[k]) if k >= 0 else None
        out.append((i + 1, m.group(1), marker.group(1) if marker else None, "\n".join(lines[i + 1:j])))
        i = j + 1
    return out


def parse(marker):
    """The kind of a marker and its options (`against`, `files`)."""
    parts = [p.strip() for p in marker.split(";")]
    options = {}
    for p in parts[1:]:
        key, _, value = p.partition(":")
        options[key.strip()] = value.strip()
    return parts[0], options


def jwks():
    """A JWKS of a fresh RSA key (its public half), made with openssl."""
    key = subprocess.run(["openssl", "genrsa", "2048"], capture_output=True, check=True).stdout
    text = subprocess.run(["openssl", "rsa", "-noout", "-modulus"], input=key,
                          capture_output=True, check=True).stdout.decode()
    n = bytes.fromhex(text.strip().split("=", 1)[1])
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    return json.dumps({"keys": [{"kty": "RSA", "kid": "example", "alg": "RS256", "use": "sig",
                                 "n": b64(n), "e": b64((65537).to_bytes(3, "big"))}]})


class Runner:
    def __init__(self, python):
        self.python = python
        self.server = None
        self.failures = []
        self.work = tempfile.mkdtemp(prefix="e2a-examples-")
        self.home = os.path.join(self.work, "home")
        os.makedirs(self.home)
        self.env = dict(os.environ, HOME=self.home, XDG_STATE_HOME=os.path.join(self.home, "state"),
                        E2A_LOG="warn")
        for var in ("E2A_TOKEN", "E2A_AGENT_TOKEN"):
            self.env.pop(var, None)

    def scratch(self, path):
        """A fresh scratch directory for the examples of `path`, linking to the repository."""
        d = os.path.join(self.work, path.replace("/", "_"))
        os.makedirs(d)
        for entry in os.listdir(ROOT):
            if entry not in (".git", "target"):
                os.symlink(os.path.join(ROOT, entry), os.path.join(d, entry))
        self.cwd = d

    def files(self, spec):
        for item in spec.split():
            name, _, source = item.partition("=")
            dest = os.path.join(self.cwd, name)
            if source == "@jwks":
                open(dest, "w").write(jwks())
            elif source:
                shutil.copy(os.path.join(ROOT, source), dest)
            else:
                open(dest, "w").write("example-placeholder-secret\n")

    def stop(self):
        if self.server:
            try:
                os.killpg(self.server.pid, signal.SIGTERM)
                self.server.wait(15)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(self.server.pid, signal.SIGKILL)
            self.server = None

    def start(self, command):
        """Starts the gateway `command` (its banner awaited); why not, when it did not start."""
        self.stop()
        # every server stays on loopback: a public bind is tried on 127.0.0.1
        command = command.replace(CARGO_RUN, "e2a").replace("--bind 0.0.0.0:", "--bind 127.0.0.1:")
        log = open(os.path.join(self.work, "server.log"), "w")
        self.server = subprocess.Popen(["bash", "-c", command], cwd=self.cwd, env=self.env, stdout=subprocess.PIPE,
                                       stderr=log, start_new_session=True, text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.server.stdout.readline()
            if "listening on" in line:
                return None
            if not line and self.server.poll() is not None:
                break
        self.stop()
        return f"`{command}` did not start: {open(log.name).read()[-2000:]}"

    def sh(self, text, timeout=120):
        text = text.replace(CARGO_RUN, "e2a")
        # the output goes to a file: what the block leaves in the background keeps its end open
        with tempfile.TemporaryFile(mode="w+") as out:
            p = subprocess.Popen(["bash", "-eo", "pipefail", "-c", text], cwd=self.cwd, env=self.env,
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                code = "(timed out)"
            finally:
                try:
                    os.killpg(p.pid, signal.SIGTERM)  # what the block left in the background
                except ProcessLookupError:
                    pass
            out.seek(0)
            said = out.read()
        return None if code == 0 else f"exit {code}: {said[-3000:]}"

    def block(self, kind, marker, text):
        """Runs one block; why it failed, or None."""
        what, options = parse(marker)
        if "files" in options:
            self.files(options["files"])
        if what.startswith("skip"):
            return None
        if what == "run":
            if options.get("against") == "none":
                self.stop()
            elif "against" in options:
                why = self.start(options["against"])
                if why:
                    return why
            if kind == "python":
                path = os.path.join(self.cwd, "example.py")
                open(path, "w").write(text)
                return self.sh(f"{shlex.quote(self.python)} example.py")
            return self.sh(text)
        if what == "serve":
            joined = re.sub(r"\\\n\s*", " ", text)
            lines = [l for l in joined.split("\n") if l.strip() and not l.lstrip().startswith("#")]
            for line in lines:
                command = line.split("  #")[0].strip()
                if command.replace(CARGO_RUN, "e2a").startswith("e2a serve"):
                    why = self.start(command)
                else:
                    why = self.sh(command)
                if why:
                    return why
            return None
        if what == "config":
            open(os.path.join(self.cwd, "e2a.toml"), "w").write(text + "\n")
            names = re.findall(r'_env\s*=\s*"([A-Z0-9_]+)"', text)
            env = " ".join(f"{n}=example-placeholder" for n in names)
            return self.sh(f"{env} e2a config check e2a.toml")
        if what == "script":
            open(os.path.join(self.cwd, "script.json"), "w").write(text)
            why = self.start(f"e2a serve --bind 127.0.0.1:{PORT} --agent script:script.json")
            self.stop()
            return why
        return f"unknown marker `{marker}`"

    def file(self, path):
        self.scratch(path)
        for line, kind, marker, text in blocks(path):
            where = f"{path}:{line}"
            if kind in EXEMPT:
                print(f"  {where} [{kind}] {EXEMPT[kind]}")
                continue
            if marker is None:
                self.failures.append(f"{where}: a ```{kind} block without an `<!-- example: … -->` marker")
                continue
            started = time.monotonic()
            why = self.block(kind, marker, text)
            took = time.monotonic() - started
            status = "skipped" if marker.startswith("skip") else "ok" if why is None else "FAILED"
            print(f"  {where} [{kind}] {marker[:60]}: {status} ({took:.1f} s)", flush=True)
            if why:
                print(f"    {why}", flush=True)
                self.failures.append(f"{where}: {why}")
        self.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="runs the python examples (a2a-sdk installed)")
    parser.add_argument("files", nargs="*", default=FILES)
    args = parser.parse_args()
    if shutil.which("e2a") is None:
        sys.exit("no e2a on PATH (cargo install --path cli)")
    runner = Runner(os.path.abspath(args.python) if os.sep in args.python else args.python)
    try:
        for path in args.files:
            print(f"== {path}", flush=True)
            runner.file(path)
    finally:
        runner.stop()
        shutil.rmtree(runner.work, ignore_errors=True)
    if runner.failures:
        print("\n".join(["", "examples that failed:"] + runner.failures))
        sys.exit(1)
    print("every example ran")


if __name__ == "__main__":
    main()
