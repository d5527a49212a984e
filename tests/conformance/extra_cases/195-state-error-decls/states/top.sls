base:
  '*':
    - decls
