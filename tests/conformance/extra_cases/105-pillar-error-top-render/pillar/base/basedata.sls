basedata: 1
