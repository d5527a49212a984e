"""mount states for real, inside a private mount namespace (``unshare -m``): tmpfs mounts on temp
directories and a temp fstab, so nothing is mounted on the host. Results follow Salt 3008.3's
(captured the same way)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = r"""
import json, sys
sys.path.insert(0, {root!r})
from runtime.states import StateContext, mount
T, R = StateContext(test=True), StateContext()
base, fstab = {base!r}, {base!r} + "/fstab"
m1, m2 = base + "/m1", base + "/m2"
import os
os.makedirs(m1)
args = dict(device="tmpfs", fstype="tmpfs", config=fstab)
out = {{}}
out["t1"] = mount.mounted(T, m1, opts="size=1m", **args)
out["t2"] = mount.mounted(T, m2, mkmnt=True, **args)
out["r1"] = mount.mounted(R, m1, opts="size=1m", **args)
out["r2"] = mount.mounted(R, m2, mkmnt=True, persist=False, **args)
out["again"] = mount.mounted(R, m1, opts="size=1024k", **args)
out["t_opts"] = mount.mounted(T, m1, opts="size=2m", **args)
out["r_opts"] = mount.mounted(R, m1, opts="size=2m", **args)
out["opts_after"] = mount.active(m1).opts
out["watch"] = mount.mod_watch(R, m1, sfun="mounted", device="tmpfs", fstype="tmpfs", opts="size=3m")
out["watch_opts"] = mount.active(m1).opts
out["fstab"] = open(fstab).read()
out["tu"] = mount.unmounted(T, m1, config=fstab, persist=True)
out["u"] = mount.unmounted(R, m1, config=fstab, persist=True)
out["u2"] = mount.unmounted(R, m1, config=fstab, persist=True)
out["mounted_after"] = mount.active(m1) is not None
out["fstab_after"] = open(fstab).read()
print(json.dumps(out))
"""


def _mountns_ok() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _mountns_ok(), reason="optional: cannot create a mount namespace (unshare -m) here")
def test_mount_states_in_a_private_mount_namespace(tmp_path):
    base = str(tmp_path / "mnt")
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, "-c",
                           SCRIPT.format(root=ROOT, base=base)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    m1, m2 = f"{base}/m1", f"{base}/m2"
    assert (out["t1"]["result"], out["t1"]["comment"]) == (None, f"{m1} would be mounted")
    assert out["t2"]["comment"] == f"{m2} would be created and mounted"
    assert out["r1"]["changes"] == {"mount": True, "persist": "new"}
    assert out["r1"]["comment"] == "Target was successfully mounted. Added new entry to the fstab."
    assert (out["r2"]["changes"], out["r2"]["comment"]) == ({"mount": True}, "Target was successfully mounted")
    assert out["again"]["changes"] == {"persist": "update"}  # 1024k is 1m: no remount, the fstab text changed
    assert (out["t_opts"]["result"], out["t_opts"]["comment"]) == (
        None, "Remount would be forced because options (size=2m)changed")
    assert out["r_opts"]["changes"] == {"umount": "Forced remount because options (size=2m) changed",
                                        "persist": "update"}
    assert "size=2048k" in out["opts_after"]
    assert out["watch"]["comment"] == f"{m1} remounted" and "size=3072k" in out["watch_opts"]
    assert out["fstab"] == f"tmpfs\t\t{m1}\ttmpfs\tsize=2m\t0 0\n"
    assert (out["tu"]["result"], out["tu"]["comment"]) == (None, f"Mount point {m1} is mounted but should not be")
    assert out["u"]["changes"] == {"umount": True, "persist": "purged"}
    assert out["u"]["comment"] == "Target was successfully unmounted. Removed target from fstab"
    assert out["u2"]["comment"] == "Target was already unmounted. fstab entry not found"
    assert out["mounted_after"] is False and out["fstab_after"] == ""
    assert not os.path.ismount(m1)  # the host never saw the mounts
