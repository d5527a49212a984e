good: 1
