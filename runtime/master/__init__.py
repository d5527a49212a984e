"""The master's daemon-side pieces (key store, shared session state, auth handler, ...)."""
