slashed: 1
