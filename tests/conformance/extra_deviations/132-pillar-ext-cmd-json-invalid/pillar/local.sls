local: 1
shared:
  who: sls
  sls: 1
