include:
  - leaf:
      key: leafkey
nested: 1
