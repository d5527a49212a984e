base:
  '*':
    - failhard
