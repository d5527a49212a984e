# The public certificate for the `frontends` nodegroup (web and lb hosts).
#
# contents_pillar writes a pillar value as the whole file: handy for
# certificates and keys kept in pillar.
{% from 'map.jinja' import root with context %}
{% set tls_dir = root ~ '/etc/ssl/shop' %}

tls_dir:
  file.directory:
    - name: {{ tls_dir }}
    - makedirs: True
    - mode: '0750'

tls_certificate:
  file.managed:
    - name: {{ tls_dir }}/cert.pem
    - contents_pillar: tls:certificate
    - mode: '0644'
    - require:
      - file: tls_dir

tls_private_key:
  file.managed:
    - name: {{ tls_dir }}/key.pem
    - contents_pillar: tls:private_key
    - mode: '0600'
    - show_changes: False
    - require:
      - file: tls_dir

# HAProxy wants certificate and key in one file.
tls_bundle:
  file.managed:
    - name: {{ tls_dir }}/bundle.pem
    - contents: |
        {{ (pillar['tls']['certificate'] ~ pillar['tls']['private_key']) | indent(8) }}
    - mode: '0600'
    - show_changes: False
    - require:
      - file: tls_certificate
      - file: tls_private_key
