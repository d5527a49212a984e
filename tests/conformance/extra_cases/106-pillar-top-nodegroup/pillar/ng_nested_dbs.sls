ng:
  nested_dbs: 1
