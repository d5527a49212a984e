by_j: true
