never: 1
