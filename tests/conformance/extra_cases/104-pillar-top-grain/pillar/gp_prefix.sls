gp_prefix: 1
