defaults: &defaults
  port: 80
  tls: off
service_a:
  <<: *defaults
  name: a
service_b:
  <<: *defaults
  port: 8080
alias_list: &lst [1, 2]
alias_copy: *lst
bools: [on, off, yes, no, y, n, True, FALSE]
hex: 0x1F
underscored: 1_000
float: 1.5e3
octal_string: '0755'
plain_octal: 0755
null_tilde: ~
empty_value:
quoted_num: "42"
literal: |
  line1
  line2
folded_strip: >-
  folded
  text
stamp: 2024-01-02 10:20:30
version: 1.10
