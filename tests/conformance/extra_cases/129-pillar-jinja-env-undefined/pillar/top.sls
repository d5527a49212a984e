base:
  '*':
    - uses_env
    - uses_saltenv
