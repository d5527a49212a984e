# Database credentials.  In a real deployment these come from an encrypted
# source (the gpg renderer or a vault ext_pillar); they are plain text here
# so that the demo runs anywhere.  Keep values like these in files of their
# own so that they are easy to find, restrict and mask.
#
# Included by roles/db.sls under the key `postgres`.
password: demo-only-Zq8vL2pW
replication_password: demo-only-Hn4tX7cR
