base:
  '*':
    - cmds
