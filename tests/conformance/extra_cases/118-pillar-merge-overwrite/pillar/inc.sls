app:
  from_inc: 1
inc_only:
  k: v
