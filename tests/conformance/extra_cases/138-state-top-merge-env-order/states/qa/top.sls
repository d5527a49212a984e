qa:
  '*':
    - qaown
