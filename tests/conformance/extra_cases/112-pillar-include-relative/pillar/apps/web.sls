include:
  - .common
  - .shared
  - apps/slashed
web: 1
