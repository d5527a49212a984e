winner: late
seq:
  late: 1
