{% from './map.jinja' import web %}
{% set names = [] %}
{% for n in ['a', 'b', 'c', 'd'] %}{% if n == 'c' %}{% continue %}{% endif %}{% do names.append(n) %}{% endfor %}
web_vars:
  test.nop:
    - sls: {{ sls }}
    - slspath: {{ slspath }}
    - slsdotpath: {{ slsdotpath }}
    - slscolonpath: {{ slscolonpath }}
    - sls_path: {{ sls_path }}
    - tpldir: {{ tpldir }}
    - tplfile: {{ tplfile }}
    - tpldot: {{ tpldot }}
    - saltenv: {{ saltenv }}
    - pkg: {{ web.pkg }}
    - port: {{ web.port }}
    - names_seen: {{ names | json }}
