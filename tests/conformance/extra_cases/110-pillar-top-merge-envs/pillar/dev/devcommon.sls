devcommon: 1
