pkgs:
  - git
  - htop
users:
  - name: alice
    uid: 1000
  - name: bob
    uid: 1001
nested:
  list: [b, c]
  scalar: two
