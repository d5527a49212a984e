devonly: 1
who: dev-devonly
