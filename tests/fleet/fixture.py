"""A fixture fleet: a git repository holding pillar and state trees, and 240 minions of grains.

Roles (web, db, app) and datacenters (dc1, dc2, dc3) are spread so that each
(role, datacenter) pair has 26-27 minions; tests change files that only some
pairs see and check that exactly those minions are reported.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import yaml

ROLES = ("web", "db", "app")
DATACENTERS = ("dc1", "dc2", "dc3")
FLEET_SIZE = 240

PILLAR = {
    "top.sls": """
        base:
          '*':
            - common
          'G@role:web':
            - match: compound
            - roles.web
          'G@role:db':
            - match: compound
            - roles.db
          'G@role:db and G@dc:dc1':
            - match: compound
            - special.db_dc1
          'app-*':
            - roles.app
    """,
    "common/init.sls": """
        include:
          - common.users
        ntp:
          servers:
            - ntp1.{{ grains['dc'] }}.example.net
            - ntp2.{{ grains['dc'] }}.example.net
        datacenter: {{ grains['dc'] }}
    """,
    "common/users.sls": """
        users:
          admin:
            uid: 1000
            shell: /bin/bash
    """,
    "roles/web.sls": """
        include:
          - secrets.web:
              key: nginx
        nginx:
          port: 80
          workers: {{ grains['cpus'] * 2 }}
          vhosts:
        {%- for site in ['shop', 'blog'] %}
            {{ site }}.example.net:
              root: /srv/{{ site }}
        {%- endfor %}
    """,
    "secrets/web.sls": """
        tls_private_key: web-tls-key-0123456789
        admin_password: web-admin-pass-9876
    """,
    "roles/db.sls": """
        postgres:
          port: 5432
          max_connections: 100
          password: db-secret-pw-4242
    """,
    "special/db_dc1.sls": """
        postgres:
          max_connections: 300
    """,
    "roles/app.sls": """
        app:
          name: shop
          port: 8000
    """,
}

STATES = {
    "top.sls": """
        base:
          '*':
            - base
          'G@role:web':
            - match: compound
            - web
          'G@role:db':
            - match: compound
            - db
    """,
    "base.sls": """
        chrony:
          pkg.installed: []
        /etc/chrony.conf:
          file.managed:
            - contents: |
        {%- for server in pillar['ntp']['servers'] %}
                server {{ server }} iburst
        {%- endfor %}
            - require:
              - pkg: chrony
    """,
    "web.sls": """
        nginx:
          pkg.installed: []
          service.running:
            - watch:
              - file: /etc/nginx/nginx.conf
        /etc/nginx/nginx.conf:
          file.managed:
            - contents: "listen {{ pillar['nginx']['port'] }}; workers {{ pillar['nginx']['workers'] }};"
    """,
    "db.sls": """
        postgresql:
          pkg.installed: []
        /etc/postgresql/postgresql.conf:
          file.managed:
            - contents: "max_connections = {{ pillar['postgres']['max_connections'] }}"
        /root/.pgpass:
          file.managed:
            - contents: "*:*:*:postgres:{{ pillar['postgres']['password'] }}"
            - mode: '0600'
    """,
}


def fleet_grains() -> dict[str, dict[str, Any]]:
    fleet = {}
    for n in range(FLEET_SIZE):
        role = ROLES[n % len(ROLES)]
        dc = DATACENTERS[(n // len(ROLES)) % len(DATACENTERS)]
        minion_id = f"{role}-{n:04d}"
        fleet[minion_id] = {"role": role, "dc": dc, "cpus": 1 + n % 4, "os_family": "Debian"}
    return fleet


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.net", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.net", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_SYSTEM=os.devnull)
    proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout.strip()


def make_repo(root: Path, extra_config: dict[str, Any] | None = None) -> Path:
    """root/repo (a git repository with one commit of pillar/ and states/), root/saltpan.conf, root/fleet.yaml."""
    repo = root / "repo"
    write_files(repo / "pillar", PILLAR)
    write_files(repo / "states", STATES)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial trees")
    config = {"pillar_roots": {"base": [str(repo / "pillar")]}, "file_roots": {"base": [str(repo / "states")]},
              "cachedir": str(root / "cache")}
    config.update(extra_config or {})
    (root / "saltpan.conf").write_text(yaml.safe_dump(config), encoding="utf-8")
    (root / "fleet.yaml").write_text(yaml.safe_dump(fleet_grains()), encoding="utf-8")
    return repo
