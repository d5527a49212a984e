winner: first
seq:
  first: 1
