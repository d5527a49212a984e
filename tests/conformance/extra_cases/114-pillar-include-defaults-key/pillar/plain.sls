plain: 1
services:
  plain: true
