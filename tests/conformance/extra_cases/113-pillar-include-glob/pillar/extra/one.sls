extra:
  - one
