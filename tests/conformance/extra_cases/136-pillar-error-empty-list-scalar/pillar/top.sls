base:
  '*':
    - empty
    - comments
    - alist
    - ascalar
    - good
