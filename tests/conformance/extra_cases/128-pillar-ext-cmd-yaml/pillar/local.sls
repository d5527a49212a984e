source: sls
shared:
  sls: 0
  who: sls
sls_only: true
