basedata: 1
who: base
