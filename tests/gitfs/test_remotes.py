"""Salt's gitfs / git_pillar configuration keys read into Remote values (runtime.gitfs.remotes)."""

from __future__ import annotations

import base64
import hashlib

import pytest

from runtime.gitfs.remotes import (
    GitConfigError,
    backends,
    git_pillar_remotes,
    gitfs_remotes,
    safe_url,
)

URL = "https://git.example.com/states.git"


def one(opts: dict) -> object:
    (remote,) = gitfs_remotes(opts)
    return remote


def test_a_bare_url_takes_the_global_defaults() -> None:
    remote = one({"gitfs_remotes": [URL], "gitfs_root": "salt/", "gitfs_base": "main",
                  "gitfs_mountpoint": "salt://apps/", "gitfs_ref_types": "branch, tag"})
    assert (remote.url, remote.root, remote.base, remote.mountpoint) == (URL, "salt", "main", "apps")
    assert remote.ref_types == ("branch", "tag")
    assert remote.update_interval == 60 and remote.refspecs[0] == "+refs/heads/*:refs/remotes/origin/*"


def test_per_remote_parameters_override_the_globals() -> None:
    remote = one({"gitfs_root": "ignored", "gitfs_remotes": [{URL: [
        {"root": "states"}, {"mountpoint": "salt://formulas/nginx"}, {"base": "production"}, {"name": "nginx"},
        {"update_interval": "120"}, {"disable_saltenv_mapping": "True"}]}]})
    assert (remote.root, remote.mountpoint, remote.base, remote.name) == ("states", "formulas/nginx",
                                                                          "production", "nginx")
    assert remote.update_interval == 120 and remote.disable_saltenv_mapping is True
    assert remote.cache_key == "nginx"


def test_the_cache_directory_is_salts_hash_of_the_remote() -> None:
    expected = base64.b64encode(hashlib.sha256(URL.encode()).digest()).decode().replace("/", "_")
    assert one({"gitfs_remotes": [URL]}).cache_key == expected


def test_saltenv_mapping_per_remote_and_global() -> None:
    remote = one({"gitfs_saltenv": [{"qa": [{"ref": "release-qa"}]}, {"dev": [{"ref": "ignored"}]}],
                  "gitfs_remotes": [{URL: [{"saltenv": [{"dev": [{"ref": "develop"}, {"root": "other"},
                                                                  {"mountpoint": "salt://dev"}]},
                                                         {"base": [{"ref": "stable"}]}]}]}]})
    assert remote.ref_for("dev") == "develop" and remote.root_for("dev") == "other"
    assert remote.mountpoint_for("dev") == "dev"
    assert remote.ref_for("qa") == "release-qa"  # from gitfs_saltenv
    assert remote.base == "stable" and remote.ref_for("base") == "stable"  # a base mapping rewrites base
    assert remote.ref_for("feature") == "feature"
    # branches: develop -> dev (not 'develop'), stable -> base, others by name; mapped envs always listed
    envs = remote.envs_from_refs(["develop", "stable", "feature"], ["v1"])
    assert envs == {"dev", "base", "feature", "v1", "qa"}


def test_all_saltenvs_and_disabled_mapping() -> None:
    remote = one({"gitfs_remotes": [{URL: [{"all_saltenvs": "main"}]}]})
    assert remote.ref_for("anything") == "main" and remote.ref_for("base") == "main"
    remote = one({"gitfs_disable_saltenv_mapping": True,
                  "gitfs_remotes": [{URL: [{"saltenv": [{"dev": [{"ref": "develop"}]}]}]}]})
    assert remote.ref_for("feature") is None and remote.ref_for("dev") == "develop"
    assert remote.envs_from_refs(["master", "feature", "develop"], []) == {"base", "dev"}


def test_whitelist_and_blacklist_take_globs_and_regexes() -> None:
    remote = one({"gitfs_remotes": [URL], "gitfs_saltenv_whitelist": ["base", "v[0-9]*", r"release-\d+"],
                  "gitfs_saltenv_blacklist": "v0*"})
    assert [e for e in ("base", "v1", "v0.9", "release-12", "dev") if remote.exposes(e)] == ["base", "v1",
                                                                                        "release-12"]


def test_git_pillar_entries() -> None:
    remotes = git_pillar_remotes({"git_pillar_branch": "main", "git_pillar_root": "pillar"}, [
        "__env__ https://git.example.com/pillar.git",
        {"dev https://git.example.com/other.git": [{"env": "base"}, {"root": "p"}, {"name": "o"}]},
        "https://git.example.com/plain.git"])
    env_remote, other, plain = remotes
    assert (env_remote.branch, env_remote.url, env_remote.root) == ("__env__", "https://git.example.com/pillar.git",
                                                                    "pillar")
    assert env_remote.checkout_target("qa", None) == "qa"
    assert env_remote.checkout_target(None, "dev") == "dev"
    assert env_remote.checkout_target(None, None) == "master"  # base -> git_pillar_base (master)
    assert env_remote.pillar_env(None, "dev", "master") == "dev"
    assert env_remote.pillar_env(None, None, "master") == "base"
    assert (other.branch, other.root, other.pillar_env(None, None, "master")) == ("dev", "p", "base")
    assert plain.branch == "main" and plain.pillar_env(None, None, "master") == "main"


@pytest.mark.parametrize(("opts", "message"), [
    ({"gitfs_remotes": [{URL: [{"mountpont": "x"}]}]}, "gitfs_remotes[0] 'https://git.example.com/states.git': "
     "invalid parameter 'mountpont'"),
    ({"gitfs_remotes": [{URL: None}]}, "remove the trailing colon"),
    ({"gitfs_remotes": ["/srv/git/states"]}, "is not a git URL saltpan can fetch"),
    ({"gitfs_remotes": [{URL: [{"ref_types": ["branch", "commit"]}]}]}, "invalid ref_types commit"),
    ({"gitfs_remotes": [URL, {URL: [{"root": "x"}]}]}, "would share one cache directory; give one of them"),
    ({"gitfs_remotes": [{URL: [{"saltenv": [{"dev": [{"branch": "x"}]}]}]}]}, "saltenv 'dev': invalid parameter"),
    ({"gitfs_remotes": [{URL: [{"update_interval": "soon"}]}]}, "must be a number of seconds"),
])
def test_bad_configuration_is_one_clear_error(opts: dict, message: str) -> None:
    with pytest.raises(GitConfigError, match=message.replace("[", r"\[").replace("]", r"\]").replace(
            ".", r"\.").replace("(", r"\(")):
        gitfs_remotes(opts)


def test_git_pillar_base_needs_env_branch() -> None:
    with pytest.raises(GitConfigError, match="'base' can only be set when the branch is __env__"):
        git_pillar_remotes({}, [{"master https://h/p.git": [{"base": "main"}]}])


def test_credentials_never_show() -> None:
    secret_url = "https://deploy:s3cr3t@git.example.com/states.git"
    remote = one({"gitfs_remotes": [{secret_url: [{"password": "hunter2"}, {"user": "deploy"}]}]})
    assert safe_url(secret_url) == "https://git.example.com/states.git"
    assert "s3cr3t" not in remote.label and "hunter2" not in repr(remote) and "s3cr3t" not in repr(remote.auth)
    assert safe_url("ssh://git@host/repo.git") == "ssh://git@host/repo.git"  # an ssh user is no secret
    with pytest.raises(GitConfigError) as err:
        gitfs_remotes({"gitfs_remotes": [{secret_url: [{"bogus": 1}]}]})
    assert "s3cr3t" not in str(err.value)


def test_scp_like_ssh_urls_and_git_urls() -> None:
    assert one({"gitfs_remotes": ["git@github.com:org/states.git"]}).url == "ssh://git@github.com/org/states.git"
    assert one({"gitfs_remotes": ["git://127.0.0.1:9418/states.git"]}).url.startswith("git://")


def test_fileserver_backend_order() -> None:
    assert backends({"fileserver_backend": ["git", "roots"]}) == ["gitfs", "roots"]
    assert backends({}) == ["roots"]
    with pytest.raises(GitConfigError, match="backend 'hgfs' is not supported"):
        backends({"fileserver_backend": ["roots", "hgfs"]})
