{% set sb = grains['sandbox'] %}
in_cwd:
  cmd.run:
    - name: pwd > out_cwd.txt
    - cwd: {{ sb }}/work

with_env_list:
  cmd.run:
    - name: echo "$GREETING $TARGET" > {{ sb }}/env_list.txt
    - env:
      - GREETING: hello
      - TARGET: list

with_env_dict:
  cmd.run:
    - name: echo "$GREETING" > {{ sb }}/env_dict.txt
    - env:
        GREETING: dict

creates_skip:
  cmd.run:
    - name: echo skip > {{ sb }}/skip.txt
    - creates: {{ sb }}/exists.flag

creates_run:
  cmd.run:
    - name: echo made > {{ sb }}/made.flag
    - creates: {{ sb }}/made.flag

fails:
  cmd.run:
    - name: exit 3
