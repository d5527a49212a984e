include:
  - inc
app:
  opts:
    b: 2
list: [3]
