base:
  '*':
    - app
    {{ undefined_in_top }}
