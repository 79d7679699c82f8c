# Sourced by scripts/run and scripts/test: create .venv and (re)install the project when
# pyproject.toml changed since the last install.
ensure_venv() {
  local extras="$1"
  local python="${PYTHON:-python3}"
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "crier needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)" >&2
    exit 1
  fi
  if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
  fi
  local stamp=".venv/.crier-installed-$extras"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]"
    touch "$stamp"
  fi
}
