include:
  - inc
pkgs:
  - vim
  - git
users:
  - name: alice
    uid: 1000
nested:
  list: [a, b]
  scalar: one
