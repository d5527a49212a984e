base:
  '*':
    - prereq
