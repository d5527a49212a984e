compound_not: true
