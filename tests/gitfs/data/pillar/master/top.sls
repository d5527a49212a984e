{{ saltenv }}:
  '*':
    - common
  'role:web':
    - match: grain
    - roles.web
