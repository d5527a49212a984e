# PostgreSQL for the database hosts, from the pillar key `postgres`.
#
# cmd.run with `creates` runs once: stands in for initdb.
# cmd.run with `onchanges` runs only when a config file changed: a reload.
{% from 'map.jinja' import root, lookup with context %}
{% set pg = pillar['postgres'] %}
{% set conf_dir = root ~ lookup.postgres.conf_dir %}
{% set data_dir = root ~ lookup.postgres.data_dir %}

{% if pg.get('replication') %}
# a relative include: postgres/replica.sls
include:
  - .replica
{% endif %}

postgres_data_dir:
  file.directory:
    - name: {{ data_dir }}
    - makedirs: True
    - mode: '0700'

postgres_initdb:
  cmd.run:
    - name: 'echo {{ pg['version'] }} > "{{ data_dir }}/PG_VERSION"'
    - creates: {{ data_dir }}/PG_VERSION
    - require:
      - file: postgres_data_dir

postgresql_conf:
  file.managed:
    - name: {{ conf_dir }}/postgresql.conf
    - source: salt://postgres/files/postgresql.conf.jinja
    - template: jinja
    - makedirs: True
    - context:
        conf_dir: {{ conf_dir }}
        data_dir: {{ data_dir }}
    - require:
      - cmd: postgres_initdb

pg_hba_conf:
  file.managed:
    - name: {{ conf_dir }}/pg_hba.conf
    - source: salt://postgres/files/pg_hba.conf.jinja
    - template: jinja
    - mode: '0640'
    - makedirs: True
    - require:
      - cmd: postgres_initdb

# The application's password file.  show_changes: False keeps the secret
# out of the state output (no diff is shown).
postgres_pgpass:
  file.managed:
    - name: {{ root }}{{ lookup.postgres.home }}/.pgpass
    - contents: '*:{{ pg['port'] }}:shop:shop:{{ pg['password'] }}'
    - mode: '0600'
    - makedirs: True
    - show_changes: False

postgres_reload:
  cmd.run:
    - name: 'touch "{{ root }}/var/run/postgres.reloaded"'
    - onchanges:
      - file: postgresql_conf
      - file: pg_hba_conf
