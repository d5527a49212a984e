webbase: 1
who: base-webbase
