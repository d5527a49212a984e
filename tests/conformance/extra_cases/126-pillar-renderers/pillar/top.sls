base:
  '*':
    - as_json
    - as_jinja_json
    - as_yaml
    - as_jinja_yaml
