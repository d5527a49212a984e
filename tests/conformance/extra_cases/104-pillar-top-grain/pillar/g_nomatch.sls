g_nomatch: 1
