g_list: 1
