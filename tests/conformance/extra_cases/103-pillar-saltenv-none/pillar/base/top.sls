base:
  '*':
    - basedata
dev:
  '*':
    - fromtopbase
