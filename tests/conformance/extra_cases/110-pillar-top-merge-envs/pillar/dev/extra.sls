extra: 1
