base:
  '*':
    - noauto
