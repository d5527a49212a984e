ng:
  dbs: 1
