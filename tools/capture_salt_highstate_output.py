"""Capture Salt 3008.3's highstate outputter (no colour) for sample state returns under the
state_output / state_verbose / state_output_profile settings: tests/unit/fixtures/highstate_output.json.

    /work/saltvenv/bin/python tools/capture_salt_highstate_output.py [--check]
"""

from __future__ import annotations

import os
import sys

from capture_common import capture_main

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "unit", "fixtures",
                   "highstate_output.json")

RESULTS = {
    "file_|-motd_|-/etc/motd_|-managed": {
        "result": True, "changes": {"diff": "--- \n+++ \n@@ -1 +1 @@\n-old\n+new\n"}, "comment": "File /etc/motd updated",
        "name": "/etc/motd", "__id__": "motd", "__run_num__": 0, "start_time": "10:00:00.000001", "duration": 1.5},
    "pkg_|-curl_|-curl_|-installed": {
        "result": True, "changes": {}, "comment": "All specified packages are already installed", "name": "curl",
        "__id__": "curl", "__run_num__": 1, "start_time": "10:00:00.100000", "duration": 250.25},
    "cmd_|-migrate_|-run-migrations --all_|-run": {
        "result": False, "changes": {}, "comment": "Command \"run-migrations --all\" run\nexit 2", "name":
        "run-migrations --all", "__id__": "migrate", "__run_num__": 2, "start_time": "10:00:00.400000",
        "duration": 12.0},
    "service_|-web_|-nginx_|-running": {
        "result": None, "changes": {"nginx": True}, "comment": "Service nginx is set to start", "name": "nginx",
        "__id__": "web", "__run_num__": 3, "start_time": "10:00:00.500000", "duration": 3},
    "test_|-note_|-note_|-succeed_with_changes": {
        "result": True, "changes": {"testing": {"old": "Unchanged", "new": "Something pretended to change"}},
        "comment": "Success!", "name": "note", "__id__": "note", "__run_num__": 4,
        "start_time": "10:00:00.600000", "duration": 0.4},
}

SETTINGS = {
    "full": {},
    "terse": {"state_output": "terse"},
    "mixed": {"state_output": "mixed"},
    "changes": {"state_output": "changes"},
    "full_id": {"state_output": "full_id"},
    "terse_id": {"state_output": "terse_id"},
    "mixed_id": {"state_output": "mixed_id"},
    "changes_id": {"state_output": "changes_id"},
    "not_verbose": {"state_verbose": False},
    "no_profile": {"state_output_profile": False},
    "pct": {"state_output_pct": True},
    "terse_not_verbose": {"state_output": "terse", "state_verbose": False},
}


def capture() -> dict:
    import copy

    import salt.config
    import salt.loader

    out = {}
    for label, settings in SETTINGS.items():
        opts = salt.config.minion_config(None)
        opts.update(color=False, **settings)
        outputters = salt.loader.outputters(opts)
        out[label] = {"opts": settings, "text": outputters["highstate"]({"local": copy.deepcopy(RESULTS)})}
    out["compile_error"] = {"opts": {}, "text": salt.loader.outputters(salt.config.minion_config(None))["highstate"](
        {"local": ["Rendering SLS 'base:web' failed: Jinja variable 'x' is undefined"]})}
    return {"results": RESULTS, "outputs": out}


def main() -> int:
    return capture_main(__doc__, OUT, capture, lambda d: f"{len(d['outputs'])} outputs", "highstate outputter")


if __name__ == "__main__":
    sys.exit(main())
