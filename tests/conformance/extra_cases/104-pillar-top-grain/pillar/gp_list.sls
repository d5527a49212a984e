gp_list: 1
