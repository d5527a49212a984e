leaf: 1
