devdata: 1
who: dev
