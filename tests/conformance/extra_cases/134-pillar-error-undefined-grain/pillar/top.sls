base:
  '*':
    - good
    - bad_grain
    - bad_var
    - safe
