#!/usr/bin/env bash
# Debian packages the test suite needs beyond Python: PostgreSQL's server (initdb, pg_ctl)
# for the postgres ext_pillar and postgres_* state tests, useradd/groupadd (passwd) for the user,
# group and publisher_acl tests, crontab (cron) and at/atq (at) for the cron and at state tests.  Installed only when missing and only when we can (root +
# apt-get); otherwise the tests that need them skip, and under CI a skip is a failure.
#
# Some packages are only *downloaded* (to $SALTPAN_TEST_DEBS, default /var/cache/saltpan-test-debs)
# and unpacked by the tests into a private directory: installing them would change what real Salt
# and saltpan report on this host (debconf-utils makes Salt's debconf state available, and the
# real-world formulas' expected results were taken on a host without it).
set -euo pipefail
missing=()
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null || missing+=(postgresql)
command -v useradd >/dev/null || [ -x /usr/sbin/useradd ] || missing+=(passwd)
command -v crontab >/dev/null || missing+=(cron)
command -v atq >/dev/null || missing+=(at)
debs_dir="${SALTPAN_TEST_DEBS:-/var/cache/saltpan-test-debs}"
download=()
compgen -G "$debs_dir/debconf-utils_*.deb" >/dev/null || download+=(debconf-utils)
[ ${#missing[@]} -eq 0 ] && [ ${#download[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "test packages missing (${missing[*]} ${download[*]}); not root or no apt-get: the tests that need them will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing Debian packages for the tests: ${missing[*]}"
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ${#download[@]} -gt 0 ]; then
    echo "downloading (not installing) Debian packages for the tests into $debs_dir: ${download[*]}"
    mkdir -p "$debs_dir"
    chmod 755 "$debs_dir"
    # apt's sandbox user must be able to write there
    (cd "$debs_dir" && chown _apt "$debs_dir" 2>/dev/null; apt-get download -q "${download[@]}" >/dev/null)
fi
