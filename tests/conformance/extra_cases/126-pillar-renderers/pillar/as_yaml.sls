#!yaml
yaml_only:
  literal: "{{ grains['os'] }}"
  octal_like: 0755
  yes_word: yes
