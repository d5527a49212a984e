base:
  '*':
    - links
