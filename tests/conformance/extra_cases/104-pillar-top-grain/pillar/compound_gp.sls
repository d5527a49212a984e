compound_gp: 1
