good: {{ grains.os }}
