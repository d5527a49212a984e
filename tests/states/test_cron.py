"""cron states for real on a throwaway user's crontab (crontab from the cron package, which
tools/test-packages.sh installs; the daemon need not run). Results as Salt 3008.3's (captured
with salt-call on the same jobs)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from runtime.states import StateContext, cron

pytestmark = pytest.mark.skipif(shutil.which("crontab") is None,
                                reason="optional: needs crontab (the cron package, tools/test-packages.sh)")
RUN, TEST = StateContext(), StateContext(test=True)


def _tab(user: str) -> str:
    res = subprocess.run(["crontab", "-l", "-u", user], capture_output=True, text=True)
    return res.stdout if res.returncode == 0 else ""


def test_present_absent_and_env(throwaway_user):
    user, _home = throwaway_user
    subprocess.run(["crontab", "-u", user, "-"], input="# my own line\n0 0 * * * /bin/true\n", text=True, check=True)
    cmd = "/usr/bin/backup --all"
    ret = cron.present(TEST, cmd, user=user, minute=5, hour=2)
    assert (ret["result"], ret["comment"]) == (None, f"Cron {cmd} is set to be added")
    assert "backup" not in _tab(user)
    ret = cron.present(RUN, cmd, user=user, minute=5, hour=2)
    assert ret == {"changes": {user: cmd}, "comment": f"Cron {cmd} added to {user}'s crontab", "name": cmd,
                   "result": True}
    assert cron.present(RUN, cmd, user=user, minute=5, hour=2)["comment"] == f"Cron {cmd} already present"
    assert cron.present(TEST, cmd, user=user, minute=5, hour=2)["result"] is True
    cron.present(RUN, "echo special", user=user, special="@reboot", comment="at boot")
    cron.present(RUN, "echo dis", user=user, commented=True, identifier="myid")
    assert cron.env_present(RUN, "MAILTO", value="ops", user=user)["changes"] == {user: "MAILTO=ops"}
    assert _tab(user) == (
        "# my own line\n0 0 * * * /bin/true\n# Lines below here are managed by Salt, do not edit\nMAILTO=ops\n"
        f"# SALT_CRON_IDENTIFIER:{cmd}\n5 2 * * * {cmd}\n# SALT_CRON_IDENTIFIER:myid\n#DISABLED#* * * * * echo dis\n"
        "# at boot SALT_CRON_IDENTIFIER:echo special\n@reboot echo special\n")

    ret = cron.present(TEST, cmd, user=user, minute=10, hour=2)
    assert (ret["result"], ret["comment"]) == (None, f"Cron {cmd} is set to be updated")
    assert cron.present(RUN, cmd, user=user, minute=10, hour=2)["comment"] == f"Cron {cmd} updated"
    assert f"10 2 * * * {cmd}" in _tab(user)
    # Salt: absent without `special` does not touch @special jobs
    assert cron.absent(RUN, "echo special", user=user)["comment"] == "Cron echo special already absent"
    assert cron.absent(TEST, "echo special", user=user, special="@reboot")["result"] is None
    assert cron.absent(RUN, "echo special", user=user, special="@reboot")["changes"] == {user: "echo special"}
    assert cron.absent(RUN, cmd, user=user)["comment"] == f"Cron {cmd} removed from {user}'s crontab"
    assert cron.env_absent(RUN, "MAILTO", user=user)["changes"] == {user: "MAILTO"}
    assert _tab(user) == ("# my own line\n0 0 * * * /bin/true\n# Lines below here are managed by Salt, do not edit\n"
                          "# SALT_CRON_IDENTIFIER:myid\n#DISABLED#* * * * * echo dis\n")


def test_random_minute_is_picked_once(throwaway_user):
    user, _home = throwaway_user
    cron.present(RUN, "echo r", user=user, minute="random")
    first = _tab(user)
    assert cron.present(RUN, "echo r", user=user, minute="random")["changes"] == {}
    assert _tab(user) == first
