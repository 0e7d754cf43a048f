# Python environments of the client and agent suites, sourced by their run scripts:
#   find_python312             a Python >= 3.12 (fast-agent needs it)
#   venv_from_lock DIR LOCK [PYTHON]   DIR holds exactly LOCK's packages (pip -r LOCK), made
#                              again only when LOCK changed since (its digest kept in DIR/.installed)

# python3.12 on PATH, else pyenv's 3.12, else python3 when it is 3.12 or later.
# (a pyenv shim may be on PATH without a 3.12 selected: every candidate is run, not just found)
find_python312() {
  local c
  for c in python3.12 \
    "$(pyenv root 2>/dev/null || true)"/versions/3.12*/bin/python3.12 \
    "$HOME"/.pyenv/versions/3.12*/bin/python3.12 \
    python3; do
    if "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
      command -v "$c" 2>/dev/null || echo "$c"
      return 0
    fi
  done
  echo "no Python >= 3.12 found (python3.12, pyenv versions/3.12*, python3)" >&2
  return 1
}

venv_from_lock() {
  local dir=$1 lock=$2 py=${3:-python3} stamp
  stamp=$(sha256sum "$lock" | cut -d' ' -f1)
  if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$stamp" ]; then
    echo "   $dir: $("$py" --version 2>&1), pip -r $lock"
    rm -rf "$dir"
    "$py" -m venv "$dir"
    "$dir/bin/pip" install -q --disable-pip-version-check -r "$lock"
    echo "$stamp" >"$dir/.installed"
  fi
}
