who: dev-branch
release: testing
