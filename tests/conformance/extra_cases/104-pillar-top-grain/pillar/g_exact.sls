hits:
  - g_exact
g_exact: 1
