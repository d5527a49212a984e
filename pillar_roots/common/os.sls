# Per-OS data, picked by the os_family grain with grains.filter_by.
#
# filter_by looks the grain's value up in the mapping (Debian, RedHat) and
# falls back to `default`.
{% set family = salt['grains.filter_by']({
    'Debian': {
        'pkg_manager': 'apt',
        'base_packages': ['vim', 'curl', 'chrony', 'ca-certificates'],
        'repo': 'http://deb.debian.org/debian',
    },
    'RedHat': {
        'pkg_manager': 'dnf',
        'base_packages': ['vim-enhanced', 'curl', 'chrony', 'ca-certificates'],
        'repo': 'https://dl.rockylinux.org/pub/rocky',
    },
    'default': {
        'pkg_manager': 'unknown',
        'base_packages': ['curl'],
        'repo': '',
    },
}, grain='os_family') %}

os:
  family: {{ grains['os_family'] }}
  pkg_manager: {{ family.pkg_manager }}
  repo: {{ family.repo }}
  base_packages: {{ family.base_packages | json }}
