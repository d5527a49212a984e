common: apps
