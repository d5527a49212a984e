gp_nested: 1
