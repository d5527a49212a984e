base:
  '*':
    - forms
