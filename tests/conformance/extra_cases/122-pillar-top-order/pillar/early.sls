winner: early
seq:
  early: 1
