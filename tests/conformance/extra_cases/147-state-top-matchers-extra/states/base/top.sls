base:
  webs:
    - match: nodegroup
    - ng
  'N@nested':
    - ng_nested
  'os:Deb.*':
    - match: grain_pcre
    - gpcre
  'role:frontend':
    - match: pillar
    - pil
  'I@site:name:shop':
    - pil_i
  'site:name:sh.*':
    - match: pillar_pcre
    - pil_pcre
  'role:backend':
    - match: pillar
    - never
  '*':
    - dev: devthing
