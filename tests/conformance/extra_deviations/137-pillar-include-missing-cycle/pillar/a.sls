include:
  - b
a: 1
who: a
