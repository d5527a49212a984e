"""The master: process manager, publisher, event publisher, request server and workers, stores."""
