#!/usr/bin/env bash
# Prints the path of an etcd server for the etcd store's tests, which find
# it in HOPDAG_ETCD. .ci/run calls it:
#
#   export HOPDAG_ETCD="$(tools/etcd.sh)"
#
# It builds etcd (the version tools/go.mod requires) from the Go module
# proxy into tools/bin on first use, about 1-2 minutes, and again when
# tools/go.mod changes. If that build fails it falls back to an etcd on
# PATH, or to Debian's etcd-server package (etcd 3.4, which the v3.6
# client speaks to) when apt-get is there and we are root.
set -euo pipefail
cd "$(dirname "$0")"
bin="$PWD/bin/etcd"
if [ -x "$bin" ] && [ "$bin" -nt go.mod ] && [ "$bin" -nt go.sum ]; then
  echo "$bin"
  exit 0
fi
echo "tools/etcd.sh: building etcd into $bin" >&2
if go build -trimpath -o "$bin" ./etcd >&2; then
  echo "$bin"
  exit 0
fi
echo "tools/etcd.sh: building etcd failed; looking for an installed one" >&2
if ! command -v etcd >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server >&2
fi
if command -v etcd >/dev/null; then
  command -v etcd
  exit 0
fi
echo "tools/etcd.sh: no etcd server: fix the build above, or install etcd" >&2
exit 1
