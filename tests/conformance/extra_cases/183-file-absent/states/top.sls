base:
  '*':
    - absent
