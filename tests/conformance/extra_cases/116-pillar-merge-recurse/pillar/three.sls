app:
  opts:
    d: 3
  name: three
empty_dict: {}
none_value: ~
