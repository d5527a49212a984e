base:
  'os:Debian':
    - match: grain
    - g_exact
  'os:Deb*':
    - match: grain
    - g_glob
  'roles:cache':
    - match: grain
    - g_list
  'deep:tier:front':
    - match: grain
    - g_nested
  'os:RedHat':
    - match: grain
    - g_nomatch
  'deep:zone:eu-.*-1':
    - match: grain_pcre
    - gp_nested
  'roles:(db|cache)':
    - match: grain_pcre
    - gp_list
  'os:Deb':
    - match: grain_pcre
    - gp_prefix
  'G@roles:web and P@os:(Debian|Ubuntu)':
    - compound_gp
  'G@deep:tier:back or P@env:^dev':
    - compound_nomatch
