#!/usr/bin/env bash
# Debian packages the test suite needs beyond Python: PostgreSQL's server (initdb, pg_ctl)
# for the postgres ext_pillar tests, useradd/groupadd (passwd) for the user, group and
# publisher_acl tests.  Installed only when missing and only when we can (root + apt-get);
# otherwise the tests that need them skip, and under CI a skip is a failure.
set -euo pipefail
missing=()
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null || missing+=(postgresql)
command -v useradd >/dev/null || [ -x /usr/sbin/useradd ] || missing+=(passwd)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "test packages missing (${missing[*]}); not root or no apt-get: the tests that need them will skip" >&2
    exit 0
fi
echo "installing Debian packages for the tests: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
