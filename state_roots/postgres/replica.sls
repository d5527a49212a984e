# Streaming replication settings for a replica (included by postgres/init.sls
# when the pillar has postgres:replication).
{% from 'map.jinja' import root, lookup with context %}
{% set pg = pillar['postgres'] %}
{% set repl = pg['replication'] %}

postgres_replication_conf:
  file.managed:
    - name: {{ root }}{{ lookup.postgres.conf_dir }}/conf.d/replication.conf
    - makedirs: True
    - mode: '0600'
    - show_changes: False
    - contents: |
        primary_conninfo = 'host={{ repl['primary_host'] }} port={{ repl['primary_port'] }} user=replicator password={{ pg['replication_password'] }}'
        primary_slot_name = '{{ repl['slot'] }}'
        hot_standby = {{ 'on' if pg.get('hot_standby') else 'off' }}
    # a requisite on a state of another sls file (postgres/init.sls)
    - require:
      - cmd: postgres_initdb
    # onchanges_in: the reload in postgres/init.sls also runs when this changed
    - onchanges_in:
      - cmd: postgres_reload
