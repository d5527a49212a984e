devdata: 1
