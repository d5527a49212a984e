pkgs:
  - curl
  - vim
nested:
  list: [z]
