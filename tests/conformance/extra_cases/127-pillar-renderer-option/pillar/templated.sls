#!jinja|yaml
templated:
  os: {{ grains['os'] }}
