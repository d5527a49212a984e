shared_apps: 1
shared_who: apps
