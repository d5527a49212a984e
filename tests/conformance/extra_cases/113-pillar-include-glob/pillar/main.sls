include:
  - roles.*
main: 1
who: main
