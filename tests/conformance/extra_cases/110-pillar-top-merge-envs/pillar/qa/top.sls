dev:
  'web*':
    - extra
qa:
  '*':
    - qadata
