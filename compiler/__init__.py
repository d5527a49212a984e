"""saltpan compiler: trees + opts + minion id + grains -> pillar and low chunks. Pure."""
