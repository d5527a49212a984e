who: base-common
common: 1
