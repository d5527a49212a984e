winner: zero
seq:
  zero: 1
