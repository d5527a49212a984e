app:
  ports: [8080]
  opts:
    b: 2
    c: 2
scalar_then_dict:
  now: dict
dict_then_scalar: scalar
