#!/usr/bin/env bash
# Make sure a PostgreSQL server takes the tests' connections on 127.0.0.1:5432 (user postgres,
# trust auth on loopback only): use the one running, else install and start Debian's.
set -euo pipefail
ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
ready && exit 0
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
if ! command -v pg_ctlcluster >/dev/null; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
fi
VERSION=$(ls /etc/postgresql | sort -V | tail -1)
HBA=/etc/postgresql/$VERSION/main/pg_hba.conf
grep -q "searchsvc tests" "$HBA" || \
  $SUDO sed -i '1i host all postgres 127.0.0.1/32 trust  # searchsvc tests' "$HBA"
$SUDO pg_ctlcluster "$VERSION" main start 2>/dev/null || $SUDO pg_ctlcluster "$VERSION" main reload
for _ in $(seq 30); do ready && exit 0; sleep 1; done
echo "PostgreSQL did not come up on 127.0.0.1:5432" >&2
exit 1
