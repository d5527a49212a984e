base:
  '*':
    - tmpl
