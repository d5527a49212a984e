#!py
def run():
    sandbox = __grains__["sandbox"]
    apps = __pillar__.get("apps", [])
    return {
        "py_state": {
            "file.managed": [
                {"name": sandbox + "/py.txt"},
                {"contents": "apps: " + ",".join(apps)},
                {"require": [{"file": "json_alpha"}]},
            ]
        },
        "py_test": {"test.succeed_without_changes": [{"name": "sls " + __sls__}]},
    }
