"""saltpan's crypto layer (suite ``saltpan/1``; see docs/protocol.md for the whole protocol).

- ``identity``   Ed25519 identity keys: generate/save/load, sign/verify, fingerprints
- ``aead``       the fixed suite: ChaCha20-Poly1305 with counter nonces, HKDF, transcripts
- ``handshake``  the auth hello and reply, session keys, the grant (heartbeat, publish key)
- ``channel``    sealed requests/replies inside a session (``ClientChannel``, ``ServerChannel``)
- ``publish``    publish keys per epoch, signed and sealed publications, the minion's receiver
- ``replay``     sliding counter windows and timestamp freshness
- ``trust``      the minion's trust in the master key (TOFU, ``master_finger``, change refusal)
- ``clientkey``  per-user client keys and the HMAC proof a local publisher sends
- ``errors``     the exception types, each with a stable ``reason``

The master's shared state (sessions, replay windows, publish epochs, one-shot nonces) lives in
``runtime.master.sessions``; the key store in ``runtime.master.keys``; the ``_auth`` handler that
ties them together in ``runtime.master.auth``.
"""
