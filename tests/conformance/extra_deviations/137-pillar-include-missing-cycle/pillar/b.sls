include:
  - a
b: 1
who: b
