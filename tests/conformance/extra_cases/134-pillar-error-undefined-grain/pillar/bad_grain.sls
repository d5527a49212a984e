bad: {{ grains.no_such_grain }}
