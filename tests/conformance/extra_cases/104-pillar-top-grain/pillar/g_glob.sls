g_glob: 1
