shared_top: 1
shared_who: top
