"""Capture what real Salt renders for the template cases of tests/unit/render_capture/cases.yaml.

Run with the python of a venv holding Salt 3008.3 (never saltpan's):

    /work/saltvenv/bin/python tools/capture_salt_render.py            # rewrite salt_3008.3.json
    /work/saltvenv/bin/python tools/capture_salt_render.py --check    # compare, write nothing

Each case is one Jinja template rendered by Salt's jinja renderer (what an sls's first pipeline step
does) for a masterless minion: its own file_roots (the case's `files`), fixed grains and pillar, with
Salt's real execution modules.  Cases that call host-reading functions use paths, users and programs
that do not exist, so Salt's real answer is the answer for a host where the thing is absent.

The result for each case is {"out": rendered text} or {"error": exception class name}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "..", "tests", "unit", "render_capture")
CASES = os.path.join(CASES_DIR, "cases.yaml")
OUT = os.path.join(CASES_DIR, "salt_3008.3.json")


def load_cases() -> list[dict]:
    import yaml

    with open(CASES, encoding="utf-8") as fh:
        return yaml.safe_load(fh)["cases"]


def load_defaults() -> dict:
    import yaml

    with open(CASES, encoding="utf-8") as fh:
        return yaml.safe_load(fh)["defaults"]


def render_all(cases: list[dict], defaults: dict) -> dict[str, dict]:
    import salt.config
    import salt.loader
    from salt.template import compile_template

    out: dict[str, dict] = {}
    base = tempfile.mkdtemp(prefix="salt-capture-")
    try:
        for case in cases:
            root = os.path.join(base, case["id"].replace("/", "_"))
            states = os.path.join(root, "states")
            os.makedirs(states)
            for rel, text in (case.get("files") or {}).items():
                path = os.path.join(states, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
            sls = case.get("sls", "capture")
            rel = sls.replace(".", "/") + ".sls"
            template = os.path.join(states, rel)
            os.makedirs(os.path.dirname(template), exist_ok=True)
            with open(template, "w", encoding="utf-8") as fh:
                fh.write(case["template"])
            opts = salt.config.minion_config(None)
            opts.update(file_client="local", file_roots={"base": [states]}, pillar_roots={"base": [root + "/p"]},
                        cachedir=os.path.join(root, "cache"), pki_dir=os.path.join(root, "pki"),
                        sock_dir=os.path.join(root, "sock"), id=defaults["id"])
            opts.update(case.get("opts") or {})
            opts["grains"] = dict(defaults["grains"], **(case.get("grains") or {}))
            opts["pillar"] = case["pillar"] if "pillar" in case else defaults["pillar"]
            utils = salt.loader.utils(opts)
            funcs = salt.loader.minion_mods(opts, utils=utils, context={})
            rend = salt.loader.render(opts, funcs)
            try:
                result = compile_template(template, rend, "jinja", [], [], saltenv="base", sls=sls)
                text = result.read() if hasattr(result, "read") else result
                out[case["id"]] = {"out": text}
            except Exception as exc:  # noqa: BLE001 - the kind of failure is what is captured
                cause = exc
                out[case["id"]] = {"error": type(cause).__name__}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the stored capture, write nothing")
    ap.add_argument("ids", nargs="*", help="only these case ids")
    args = ap.parse_args()
    try:
        import salt.version
    except ImportError:
        print("run this with the python of a venv holding Salt 3008.3", file=sys.stderr)
        return 2
    cases = [c for c in load_cases() if not args.ids or c["id"] in args.ids]
    got = render_all(cases, load_defaults())
    stored = {}
    if os.path.exists(OUT):
        with open(OUT, encoding="utf-8") as fh:
            stored = json.load(fh)
    if args.check:
        bad = [cid for cid in got if stored.get("cases", {}).get(cid) != got[cid]]
        for cid in bad:
            print(f"differs: {cid}: stored {stored.get('cases', {}).get(cid)!r} now {got[cid]!r}")
        return 1 if bad else 0
    merged = dict(stored.get("cases", {})) if args.ids else {}
    merged.update(got)
    with open(OUT, "w", encoding="utf-8") as fh:
        json.dump({"salt": salt.version.__version__, "cases": merged}, fh, indent=1, sort_keys=True,
                  ensure_ascii=False)
        fh.write("\n")
    for cid, res in got.items():
        print(f"{cid}: {res!r}"[:200])
    return 0


if __name__ == "__main__":
    sys.exit(main())
