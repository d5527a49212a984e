fromdev: 1
who: base-fromdev
