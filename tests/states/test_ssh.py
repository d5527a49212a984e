"""ssh_auth and ssh_known_hosts for real: a throwaway user, keys made here with ssh-keygen.

Fetching a host's keys with ssh-keyscan needs a reachable SSH server: that path asserts the
command it would run instead (no sshd here)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

import pytest
from statehelpers import write

from runtime.states import StateContext, ssh_auth, ssh_known_hosts

needs_keygen = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (openssh-client)")


def _pubkey(tmp_path, name: str, kind: str = "ed25519") -> tuple[str, str, str]:
    """(type, base64 body, comment) of a fresh key."""
    path = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", f"{name}@test", "-f", str(path)], check=True)
    enc, body, comment = (tmp_path / f"{name}.pub").read_text().split()
    return enc, body, comment


@needs_keygen
def test_ssh_auth_present_absent(throwaway_user, tmp_path):
    user, home = throwaway_user
    enc, body, comment = _pubkey(tmp_path, "k1")
    run, test = StateContext(), StateContext(test=True)
    keyfile = os.path.join(home, ".ssh/authorized_keys")

    ret = ssh_auth.present(test, body, user, enc=enc, comment=comment)
    assert (ret["result"], ret["comment"]) == (None, f"Key {body} for user {user} is set to be added")
    assert not os.path.exists(keyfile)
    ret = ssh_auth.present(run, body, user, enc=enc, comment=comment)
    assert ret == {"name": body, "changes": {body: "New"}, "result": True,
                   "comment": f"The authorized host key {body} for user {user} was added"}
    with open(keyfile) as handle:
        assert handle.read() == f"{enc} {body} {comment}\n"
    st, dst = os.stat(keyfile), os.stat(os.path.dirname(keyfile))
    assert stat.S_IMODE(st.st_mode) == 0o600 and stat.S_IMODE(dst.st_mode) == 0o700
    owner = subprocess.run(["id", "-u", user], capture_output=True, text=True).stdout.strip()
    assert str(st.st_uid) == owner and str(dst.st_uid) == owner
    again = ssh_auth.present(run, f"{enc} {body} {comment}", user)  # the whole line as name
    assert (again["changes"], again["result"]) == ({}, True)
    assert ssh_auth.present(test, body, user, enc=enc, comment=comment)["result"] is True

    ret = ssh_auth.present(run, body, user, enc=enc, comment="renamed", options=['from="10.0.0.1"'])
    assert ret["changes"] == {body: "Updated"}
    with open(keyfile) as handle:
        assert handle.read() == f'from="10.0.0.1" {enc} {body} renamed\n'

    assert ssh_auth.absent(test, body, user)["result"] is None
    assert ssh_auth.absent(run, body, user) == {"name": body, "changes": {body: "Removed"}, "result": True,
                                                "comment": "Key removed"}
    with open(keyfile) as handle:
        assert handle.read() == ""
    assert ssh_auth.absent(run, body, user)["comment"] == "Key not present"
    assert ssh_auth.absent(test, body, user)["comment"] == "Key is already absent"


@needs_keygen
def test_ssh_auth_from_a_source_file_and_manage(throwaway_user, tmp_path, make_ctx, roots):
    user, home = throwaway_user
    keys = [_pubkey(tmp_path, f"s{i}") for i in range(2)]
    write(os.path.join(roots, "keys/user.pub"), "".join(f"{e} {b} {c}\n" for e, b, c in keys))
    run, test = make_ctx(), make_ctx(test=True)
    ret = ssh_auth.present(test, "from-file", user, source="salt://keys/user.pub")
    assert ret["result"] is None and ret["comment"].count("Set to add: ") == 2
    ret = ssh_auth.present(run, "from-file", user, source="salt://keys/user.pub")
    assert (ret["result"], ret["changes"]) == (True, {"from-file": "New"})
    ret = ssh_auth.present(test, "from-file", user, source="salt://keys/user.pub")
    assert (ret["result"], ret["comment"]) == (True, "All host keys in file salt://keys/user.pub are already present")
    assert ssh_auth.present(run, "x", user, source="salt://keys/missing.pub")["comment"] == (
        "Failed to add the ssh key. Source file salt://keys/missing.pub is missing")
    # Salt: a source that does not exist counts as nothing to remove
    assert ssh_auth.absent(test, "x", user, source="salt://keys/missing.pub")["result"] is True

    other = _pubkey(tmp_path, "other")
    ret = ssh_auth.manage(run, "m", [f"{other[0]} {other[1]} {other[2]}", f"{keys[0][0]} {keys[0][1]} {keys[0][2]}"], user)
    assert ret["result"] is True
    assert ret["changes"] == {keys[1][1]: "Key removed", other[1]: "New"}
    with open(os.path.join(home, ".ssh/authorized_keys")) as handle:
        bodies = [line.split()[1] for line in handle]
    assert sorted(bodies) == sorted([keys[0][1], other[1]])

    ret = ssh_auth.absent(run, "from-file", user, source="salt://keys/user.pub")
    assert ret["changes"] == {"from-file": "Removed"}


def test_ssh_auth_errors_and_missing_user(tmp_path):
    run, test = StateContext(), StateContext(test=True)
    # Salt: in test mode a user that does not exist (yet) just gets the key "added"
    assert ssh_auth.present(test, "AAAAB3NzaC1yc2EAAAADAQABAAABAQ", "no-such-user-x")["result"] is None
    assert ssh_auth.present(run, "AAAAB3NzaC1yc2EAAAADAQABAAABAQ", "no-such-user-x")["comment"] == (
        "Failed to add the ssh key. Is the home directory available, and/or does the key file exist?")
    assert ssh_auth.present(run, "not base64!", "root", enc="ssh-rsa")["result"] is False
    assert ssh_auth.present(run, "AAAA", "root", enc="nope")["comment"] == "Incorrect encryption key type 'nope'."
    assert ssh_auth.absent(test, "AAAA", "no-such-user-x") == {
        "name": "AAAA", "changes": {}, "result": True, "comment": "Key is already absent"}


@needs_keygen
def test_known_hosts_with_a_key(throwaway_user, tmp_path):
    user, home = throwaway_user
    enc, body, _ = _pubkey(tmp_path, "host")
    run, test = StateContext(), StateContext(test=True)
    path = os.path.join(home, ".ssh/known_hosts")
    ret = ssh_known_hosts.present(test, "git.example.org", user=user, key=body, enc=enc)
    assert (ret["result"], ret["comment"]) == (None, "Key for git.example.org is set to be added to .ssh/known_hosts")
    assert not os.path.exists(path)
    ret = ssh_known_hosts.present(run, "git.example.org", user=user, key=body, enc=enc)
    assert ret["result"] is True and ret["comment"] == f"git.example.org's key saved to .ssh/known_hosts (key: {body})"
    assert ret["changes"]["old"] is None and ret["changes"]["new"][0]["key"] == body
    with open(path) as handle:
        line = handle.read()
    assert line.startswith("|1|") and line.endswith(f" {enc} {body}\n")  # hashed, as hash_known_hosts asks
    assert not os.path.exists(path + ".old")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = ssh_known_hosts.present(run, "git.example.org", user=user, key=body, enc=enc)
    assert (again["changes"], again["comment"]) == ({}, "git.example.org already exists in .ssh/known_hosts")
    assert ssh_known_hosts.present(test, "git.example.org", user=user, key=body, enc=enc)["result"] is True

    enc2, body2, _ = _pubkey(tmp_path, "host2")
    ret = ssh_known_hosts.present(run, "git.example.org", user=user, key=body2, enc=enc2, hash_known_hosts=False)
    assert ret["changes"]["old"][0]["key"] == body
    with open(path) as handle:
        assert handle.read() == f"git.example.org {enc2} {body2}\n"

    assert ssh_known_hosts.absent(test, "git.example.org", user=user)["result"] is None
    ret = ssh_known_hosts.absent(run, "git.example.org", user=user)
    assert ret["result"] is True and ret["changes"]["old"][0]["key"] == body2 and ret["changes"]["new"] is None
    with open(path) as handle:
        assert handle.read() == ""
    assert ssh_known_hosts.absent(run, "git.example.org", user=user)["comment"] == "Host is already absent"


def test_known_hosts_argument_errors_and_keyscan_command():
    test = StateContext(test=True)
    # the users formula's pillar.example gives both: Salt fails it the same way
    ret = ssh_known_hosts.present(test, "importanthost", user="root", key="AAAA", fingerprint="16:27", enc="ssh-rsa")
    assert (ret["result"], ret["comment"]) == (False, 'Specify either "key" or "fingerprint", not both.')
    assert ssh_known_hosts.present(test, "h", key="AAAA", enc="ssh-rsa", config="rel")["comment"] == (
        'If not specifying a "user", specify an absolute "config".')
    assert ssh_known_hosts.present(test, "h", user="root", key="AAAA")["comment"] == (
        'Required argument "enc" if using "key" argument.')
    assert ssh_known_hosts.keyscan_command("h.example", "ssh-ed25519", 2222, False, 5) == [
        "ssh-keyscan", "-p", "2222", "-t", "ssh-ed25519", "-T", "5", "h.example"]
    # a user that does not exist (yet): Salt's test mode predicts a removal, a run fails
    assert ssh_known_hosts.absent(test, "h", user="no-such-user-x")["result"] is None
    assert ssh_known_hosts.absent(StateContext(), "h", user="no-such-user-x")["comment"] == (
        "User no-such-user-x does not exist")
