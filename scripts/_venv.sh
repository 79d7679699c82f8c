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

# The dashboard's browser tests drive the distribution's Chromium (Playwright can't download
# browsers everywhere): install the Debian package when it is missing. Idempotent and quiet;
# without apt-get (or root) the browser tests are skipped, and say why.
ensure_chromium() {
  [ -x /usr/bin/chromium ] && return 0
  if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
    echo "no /usr/bin/chromium, and apt-get is not available as root: the dashboard's browser tests will be skipped" >&2
    return 0
  fi
  echo "installing Chromium for the dashboard's browser tests (apt-get install chromium)..." >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq chromium >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
    apt-get install -y -qq chromium >/dev/null 2>&1 \
      || echo "could not install chromium: the dashboard's browser tests will be skipped" >&2
  fi
}
