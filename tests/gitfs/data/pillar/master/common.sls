who: master-branch
release: stable
users:
  - alice
