app:
  name: one
  ports: [80, 443]
  opts:
    a: 1
    b: 1
scalar_then_dict: 1
dict_then_scalar:
  x: 1
