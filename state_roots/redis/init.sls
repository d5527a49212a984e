# Redis for the cache hosts, from the pillar key `redis`.
{% from 'map.jinja' import root, lookup with context %}

redis_conf:
  file.managed:
    - name: {{ root }}{{ lookup.redis.conf }}
    - source: salt://redis/files/redis.conf.jinja
    - template: jinja
    - makedirs: True
    - mode: '0640'
    # redis.conf holds requirepass: no diff in the output
    - show_changes: False

redis_data_dir:
  file.directory:
    - name: {{ root }}/var/lib/redis
    - makedirs: True
    - mode: '0750'

redis_service:
  test.succeed_without_changes:
    - name: redis
    - require:
      - file: redis_data_dir
    - watch:
      - file: redis_conf
