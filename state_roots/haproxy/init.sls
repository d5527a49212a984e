# HAProxy for the load balancers, from the pillar key `haproxy`.
#
# `include: - tls` pulls in the certificate states, so the haproxy config
# can require them; a minion that also gets tls from the top file runs it
# once.
{% from 'map.jinja' import root, lookup with context %}
{% set conf_dir = root ~ lookup.haproxy.conf_dir %}

include:
  - tls

haproxy_dir:
  file.directory:
    - name: {{ conf_dir }}
    - makedirs: True
    - require_in:
      - file: haproxy_cfg
      - cmd: haproxy_dhparam

# Stands in for `openssl dhparam`: `unless` skips it once the file has content.
haproxy_dhparam:
  cmd.run:
    - name: 'printf "%s\n" "demo dhparam for {{ grains['id'] }}" > "{{ conf_dir }}/dhparam.pem"'
    - unless: test -s "{{ conf_dir }}/dhparam.pem"

haproxy_cfg:
  file.managed:
    - name: {{ conf_dir }}/haproxy.cfg
    - source: salt://haproxy/files/haproxy.cfg.jinja
    - template: jinja
    - context:
        conf_dir: {{ conf_dir }}
    - require:
      - file: tls_bundle
      - cmd: haproxy_dhparam

# Stands in for `haproxy -c -f haproxy.cfg`, run when the config changed.
haproxy_config_check:
  cmd.run:
    - name: grep -q "^backend " "{{ conf_dir }}/haproxy.cfg"
    - onchanges:
      - file: haproxy_cfg

haproxy_service:
  test.succeed_without_changes:
    - name: haproxy
    - watch:
      - file: haproxy_cfg
      - file: tls_bundle
