#!jinja|yaml
jinja_yaml:
  os: {{ grains['os'] }}
  {% if 'web' in grains['roles'] %}
  web: true
  {% endif %}
