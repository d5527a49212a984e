by_i: true
