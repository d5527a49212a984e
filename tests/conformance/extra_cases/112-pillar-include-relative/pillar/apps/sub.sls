sub: 1
