#!/usr/bin/env bash
# Set up gate on a Debian machine: the system packages it needs, then a venv (.venv) with
# gate installed from this checkout. Safe to run again; it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# openssh-server: the SSH test lab; fio: G2 storage baselines; poppler-utils: report tests
# (pdftotext/pdftoppm); fonts-wqy-microhei: Chinese reports (fast to subset); pango: WeasyPrint;
# libharfbuzz-subset0: WeasyPrint subsets fonts with it (~1.8x faster PDFs than fontTools);
# iproute2: network namespaces for the multi-host lab; postgresql: the throwaway server the
# store's PostgreSQL tests start (tests/pg_support; also makes the postgres user initdb
# runs as); libpq5: psycopg's client library.
APT_PACKAGES=(python3 python3-venv python3-dev openssh-server fio poppler-utils fontconfig
              fonts-wqy-microhei libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 iproute2
              procps sudo postgresql libpq5)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
# Another apt (unattended-upgrades, a second setup) holds its locks for minutes at a time:
# wait for them, saying so, instead of failing at once. apt takes fcntl locks, which
# python's lockf tests without taking them for long.
APT_LOCKS=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock
           /var/cache/apt/archives/lock)
APT_LOCK_WAIT=${APT_LOCK_WAIT:-600}
apt_lock_holder() {
  command -v python3 >/dev/null || return 1
  python3 - "${APT_LOCKS[@]}" <<'PY'
import fcntl, sys
for path in sys.argv[1:]:
    try:
        with open(path, "r+") as f:
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (FileNotFoundError, PermissionError):  # not root: apt's own timeout waits
        continue
    except OSError:
        print(path)
        sys.exit(0)
sys.exit(1)
PY
}
wait_for_apt() {
  local waited=0 held
  while held=$(apt_lock_holder); do
    if [ "$waited" -ge "$APT_LOCK_WAIT" ]; then
      echo "setup: error: $held is still held after ${APT_LOCK_WAIT}s by another apt/dpkg;" \
           "wait for it to finish (or raise APT_LOCK_WAIT) and rerun scripts/setup.sh" >&2
      exit 4
    fi
    [ "$waited" -eq 0 ] && echo "setup: waiting for another apt/dpkg to release $held" \
                               "(up to ${APT_LOCK_WAIT}s; APT_LOCK_WAIT=N to change)" >&2
    sleep 5
    waited=$((waited + 5))
  done
}
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  wait_for_apt
  # The lock timeout covers a lock taken between our check and apt's own.
  $SUDO apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" \
    install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# pip and setuptools print hundreds of build warnings that mean nothing to a user: keep
# them in a log, and show its tail only when an install fails.
PIP_LOG=.venv/setup-pip.log
: >"$PIP_LOG"
pip_quiet() {
  if ! .venv/bin/python -m pip install -q "$@" >>"$PIP_LOG" 2>&1; then
    echo "setup: error: pip install $* failed; the last lines of $PIP_LOG:" >&2
    tail -n 20 "$PIP_LOG" >&2
    exit 3
  fi
}
# An older pip still installs; its upgrade is best effort (offline it may find nothing).
.venv/bin/python -m pip install -q --upgrade pip >>"$PIP_LOG" 2>&1 || true
pip_quiet -e '.[dev,fast]'
.venv/bin/gate --version >/dev/null
echo "setup: ready (.venv/bin/gate)" >&2
