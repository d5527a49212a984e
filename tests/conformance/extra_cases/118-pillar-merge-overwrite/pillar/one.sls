app:
  name: one
  opts:
    a: 1
    b: 1
list: [1, 2]
only_one: 1
