# TLS for the hosts that serve public HTTPS (the `frontends` nodegroup:
# web and lb hosts).  The certificate and key are placeholders: they only
# show how multi-line values look in pillar.
tls:
  domains: [shop.example.net, www.example.net]
  certificate: |
    -----BEGIN CERTIFICATE-----
    MIIBszCCAVmgAwIBAgIUDEMOcertificateDEMOcertificateDEMOwCgYIKoZI
    zj0EAwIwHDEaMBgGA1UEAwwRc2hvcC5leGFtcGxlLm5ldDAeFw0yNTAxMDEwMDAw
    -----END CERTIFICATE-----
  private_key: |
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgDEMOkeyDEMOkeyDE
    -----END PRIVATE KEY-----
