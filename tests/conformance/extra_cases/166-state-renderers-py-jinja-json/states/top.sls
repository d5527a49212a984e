base:
  '*':
    - from_json
    - from_py
    - from_yaml
