extra:
  - two
