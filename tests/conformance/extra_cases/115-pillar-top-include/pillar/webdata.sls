webdata: 1
