#!/usr/bin/env bash
# Set up gate on a Debian machine: the system packages it needs, then a venv (.venv) with
# gate installed from this checkout. Safe to run again; it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# openssh-server: the SSH test lab; fio: G2 storage baselines; poppler-utils: report tests
# (pdftotext/pdftoppm); fonts-wqy-microhei: Chinese reports (fast to subset); pango: WeasyPrint;
# libharfbuzz-subset0: WeasyPrint subsets fonts with it (~1.8x faster PDFs than fontTools);
# iproute2: network namespaces for the multi-host lab.
APT_PACKAGES=(python3 python3-venv python3-dev openssh-server fio poppler-utils fontconfig
              fonts-wqy-microhei libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 iproute2
              procps sudo)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" >&2 || true
.venv/bin/python -m pip install -q -e '.[dev,fast]' 2>&1 | grep -v "^WARNING: Location" >&2 || true
.venv/bin/gate --version >/dev/null
echo "setup: ready (.venv/bin/gate)" >&2
