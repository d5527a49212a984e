{{ saltenv }}:
  '*':
    - common
