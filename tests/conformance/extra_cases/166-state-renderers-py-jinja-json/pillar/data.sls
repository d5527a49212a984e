apps:
  - alpha
  - beta
