common: 1
