g_nested: 1
