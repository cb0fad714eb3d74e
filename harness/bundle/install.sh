#!/bin/sh
# Install gate from this bundle with no network (made by `gate bundle`; docs/remote.md).
#   sh install.sh [VENV_DIR]        default VENV_DIR: ./venv beside this script
#   PYTHON=/usr/bin/python3.11 sh install.sh /opt/gate
# 1. every file's sha256 is checked against SHA256SUMS: a damaged bundle installs nothing;
# 2. a venv is made with $PYTHON (3.11 or newer) and gate is installed into it with
#    pip --no-index --find-links (no index is ever asked);
# 3. the CJK font goes to ~/.local/share/fonts/gate (Chinese reports), and the Debian
#    packages the PDF stack needs are checked (listed, not installed: there is no network).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${1:-$here/venv}
python=${PYTHON:-python3}
say() { printf 'install.sh: %s\n' "$*" >&2; }
fail() { say "$1"; exit 4; }

cd "$here"
[ -f SHA256SUMS ] || fail "SHA256SUMS is missing: this is not a complete gate bundle"
if ! bad=$(sha256sum --check --quiet --strict SHA256SUMS 2>&1); then
  fail "checksum mismatch, nothing installed (the bundle is damaged; copy it again and run gate bundle verify): $(printf '%s' "$bad" | head -n 3 | tr '\n' ' ')"
fi
say "checksums ok ($(wc -l < SHA256SUMS) files)"

command -v "$python" >/dev/null 2>&1 || fail "no $python: set PYTHON=/path/to/python3.11 or newer"
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  fail "gate needs Python 3.11 or newer, $python is $pyver: set PYTHON=/path/to/python3.11"
arch=$(uname -m)
glibc=$("$python" -c 'import platform; print(platform.libc_ver()[1].split(".")[1])')
wheels=""
best=-1
for d in wheels/py"$pyver"-manylinux_2_*_"$arch"; do
  [ -d "$d" ] || continue
  m=${d#wheels/py"$pyver"-manylinux_2_}; m=${m%%_*}
  if [ "$m" -le "$glibc" ] && [ "$m" -gt "$best" ]; then best=$m; wheels=$d; fi
done
[ -n "$wheels" ] || fail "this bundle has no wheels for Python $pyver on $arch glibc 2.$glibc (it has: $(ls wheels | tr '\n' ' ')); make one with gate bundle --target manylinux_2_${glibc}_$arch/$pyver"

"$python" -m venv "$venv" || fail "cannot make a venv with $python (Debian: apt-get install python3-venv)"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
  --no-index --find-links "$here/$wheels" 'gate-harness[fast]' ||
  fail "pip could not install from $wheels (see its message above)"

# the load agent's wheels, shipped to client hosts by `load.placement: client`
mkdir -p "$venv/share/gate" && rm -rf "$venv/share/gate/agent" && cp -R agent "$venv/share/gate/agent"

fonts=${XDG_DATA_HOME:-$HOME/.local/share}/fonts/gate
mkdir -p "$fonts" && cp fonts/*.tt? "$fonts"/ && say "CJK font installed in $fonts"
command -v fc-cache >/dev/null 2>&1 && fc-cache "$fonts" >/dev/null 2>&1 || true

missing=""
while read -r pkg _; do
  case "$pkg" in ''|'#'*) continue ;; esac
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $pkg"
done < debian-packages.txt
if command -v dpkg-query >/dev/null 2>&1 && [ -n "$missing" ]; then
  say "for PDF reports install:$missing (apt-get install$missing, from the site's mirror)"
fi
"$venv/bin/gate" --version
say "installed: $venv/bin/gate"
