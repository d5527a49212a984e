base:
  'web[0-9]*':
    - t01
  'web0?':
    - t02
  'web[!0]*':
    - t03
  'not G@os:RedHat':
    - t04
  'web01 or db01':
    - t05
  '( G@os:Debian or G@os:RedHat ) and not L@db01':
    - t06
  'db01 and G@os:Debian or L@web01':
    - t07
  'L@web01 and not G@os:Debian or G@env:prod':
    - t08
  'G@roles:c*':
    - t09
  'G@deep:zone:eu-*':
    - t10
  'num_cpus:4':
    - match: grain
    - t11
  'enabled:True':
    - match: grain
    - t12
  'web01,web02':
    - match: list
    - t13
  'web*':
    - match: compound
    - t14
  'G@os:Debian':
    - match: glob
    - t15
  'G@os:Debian and I@anything:x':
    - t16
  'not I@anything:x':
    - t17
  'N@webs and not G@env:dev':
    - t19
  'E@web\d+ and P@deep:tier:fr.*':
    - t20
  'G@os:debian':
    - t21
  'WEB01':
    - t22
