include:
  - does.not.exist
withmissing: 1
