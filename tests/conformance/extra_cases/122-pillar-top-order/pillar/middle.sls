winner: middle
seq:
  middle: 1
