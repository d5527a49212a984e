"""The highstate outputter: Salt's human report of a state run, honouring Salt's settings

* ``state_output``: ``full`` (a block per state), ``terse`` (a line per state), ``mixed`` (a line per
  state, a block for failures), ``changes`` (a line per state without changes, a block for the others),
  and their ``*_id`` forms (the state ID shown where the name would be);
* ``state_verbose``: false leaves out the states that succeeded without changes;
* ``state_output_diff``: true leaves them out as well;
* ``state_output_profile``: the Started/Duration lines and the total run time (default true);
* ``state_output_pct``: the success and failure percentages in the summary.

The text is Salt 3008's (tests/unit/fixtures/highstate_output.json holds its captured output).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.cli.output import nested, paint
from runtime.config import option

STATE_OUTPUTS = ("full", "terse", "mixed", "changes", "full_id", "terse_id", "mixed_id", "changes_id")


def _sorted(data: Any) -> Any:
    """Salt's nested outputter prints mapping keys sorted."""
    if isinstance(data, Mapping):
        return {k: _sorted(data[k]) for k in sorted(data, key=str)}
    if isinstance(data, (list, tuple)):
        return [_sorted(v) for v in data]
    return data


def _changes_text(changes: Any, color: bool) -> tuple[bool, str]:
    if not changes:
        return False, ""
    if not isinstance(changes, dict):
        return True, f"Invalid Changes data: {changes}"
    return True, "\n" + nested(_sorted(changes), 14, color)


def _terse(comps: list[str], ret: Mapping[str, Any], profile: bool) -> str:
    result = "Changed" if ret.get("changes") else "Clean"
    if ret.get("result") is False:
        result = "Failed"
    elif ret.get("result") is None:
        result = "Differs"
    text = ""
    if "warnings" in ret:
        text += "Warnings:\n" + "\n".join(ret["warnings"])
    text += f"  Name: {comps[2]} - Function: {comps[0]}.{comps[-1]} - Result: {result}"
    if profile and "start_time" in ret:
        text += f" - Started: {ret['start_time']} - Duration: {ret.get('duration')} ms"
    return text


def _comment(ret: Mapping[str, Any]) -> str:
    comment = str(ret.get("comment", "")).strip().replace("\n", "\n" + " " * 14)
    data = ret.get("data")
    if isinstance(data, list):
        for item in data:
            comment = f"{comment} {item}"
    elif isinstance(data, dict):
        for key, value in data.items():
            comment = f"{comment}\n\t\t{key}: {value}"
    elif "data" in ret:
        comment = f"{comment} {data}"
    return comment


def _block(comps: list[str], ret: Mapping[str, Any], ctext: str, profile: bool) -> list[str]:
    lines = ["----------", f"          ID: {comps[1]}", f"    Function: {comps[0]}.{comps[3]}"]
    if comps[1] != comps[2]:
        lines.append(f"        Name: {comps[2]}")
    lines += [f"      Result: {ret.get('result')}", f"     Comment: {_comment(ret)}"]
    if profile and "start_time" in ret:
        duration = ret.get("duration", "")
        lines += [f"     Started: {ret['start_time']}", f"    Duration: {duration} ms" if duration != ""
                  else "    Duration: "]
    lines.append("     Changes:   " + ctext)
    if "warnings" in ret:
        lines.append("    Warnings: " + "\n              ".join(ret["warnings"]))
    return lines


def _shade(ret: Mapping[str, Any], changed: bool) -> str:
    if ret.get("result") is False:
        return "red"
    if ret.get("result") is None:
        return "yellow"
    return "cyan" if changed else "green"


def format_state_run(minion: str, results: Any, color: bool = False, verbose: bool = True,
                     opts: Mapping[str, Any] | None = None) -> tuple[str, bool]:
    """The report for one minion; returns (text, all_succeeded).  ``opts`` gives the state_output*
    settings (``verbose`` is state_verbose when opts has none)."""
    opts = opts or {}
    state_output = option(opts, "state_output", str).lower()
    if opts.get("state_verbose") is not None:
        verbose = option(opts, "state_verbose", bool)
    profile = option(opts, "state_output_profile", bool)
    only_changes = option(opts, "state_output_diff", bool)
    head_color = "green"
    lines: list[str] = []
    if isinstance(results, list):
        head_color = "red"
        lines.append(paint("    Data failed to compile:", "red", color))
        for err in results:
            lines.append(paint(f"----------\n    {err}", "red", color))
        return "\n".join([paint(f"{minion}:", head_color, color), *lines]), False
    if not isinstance(results, dict):
        text = "\n".join(paint(f"    {line}", "green", color) for line in str(results).splitlines())
        return "\n".join([paint(f"{minion}:", "cyan", color), text]), True
    states = {tag: ret for tag, ret in results.items() if isinstance(ret, dict) and "result" in ret}
    counts: dict[Any, int] = {}
    durations: list[float] = []
    changed_total = 0
    for tag in sorted(states, key=lambda t: states[t].get("__run_num__", 0)):
        ret = states[tag]
        counts[ret.get("result")] = counts.get(ret.get("result"), 0) + 1
        try:
            durations.append(float(str(ret.get("duration", 0) or 0).partition(" ms")[0]))
        except ValueError:
            pass
        changed, ctext = _changes_text(ret.get("changes"), color)
        changed_total += 1 if changed else 0
        if (only_changes or not verbose) and ret.get("result") and not changed:
            continue
        shade = _shade(ret, changed)
        if ret.get("result") is False:
            head_color = "red"
        elif ret.get("result") is None and head_color != "red":
            head_color = "yellow"
        comps = tag.split("_|-")
        if len(comps) != 4:
            comps = [tag, tag, tag, ""]
        if state_output.endswith("_id"):
            comps[2] = comps[1]
        if (state_output.startswith("terse") or (state_output.startswith("mixed") and ret.get("result") is not False)
                or (state_output.startswith("changes") and ret.get("result") and not changed)):
            lines.append(paint(_terse(comps, ret, profile), shade, color))
            continue
        lines.extend(paint(line, shade, color) for line in _block(comps, ret, ctext, profile))
    lines += _summary(minion, counts, changed_total, durations, profile, option(opts, "state_output_pct", bool), color)
    return "\n".join([paint(f"{minion}:", head_color, color), *lines]), counts.get(False, 0) == 0


def _summary(minion: str, counts: dict[Any, int], changed: int, durations: list[float], profile: bool, pct: bool,
             color: bool) -> list[str]:
    labels = {True: "Succeeded", False: "Failed", None: "Not Run"}
    width = max(len(x) for x in labels.values()) + max([len(str(x)) for x in counts.values()] or [0]) + 2

    def line(label: str, count: Any) -> str:
        return f"{label}: {count:>{width - (len(label) + 2)}}"

    stats = []
    if counts.get(None, 0) > 0:
        stats.append(f"unchanged={counts[None]}")
    if changed > 0:
        stats.append(f"changed={changed}")
    failed = counts.get(False, 0)
    total = sum(counts.values())
    out = [paint(f"\nSummary for {minion}\n{'-' * width}", "cyan", color),
           paint(line(labels[True], counts.get(True, 0) + counts.get(None, 0)), "green", color)
           + (f" ({', '.join(stats)})" if stats else ""),
           paint(line(labels[False], failed), "red" if failed else "cyan", color)]
    if pct and total:
        out.append(paint(line("Success %", round((total - failed) / total * 100, 2)), "green", color))
        out.append(paint(line("Failure %", round(failed / total * 100, 2)), "red" if failed else "cyan", color))
    out.append(paint(f"{'-' * width}\nTotal states run: {total:>{width - 7}}", "cyan", color))
    if profile:
        spent = sum(durations)
        unit = "ms"
        if spent > 999:
            spent, unit = spent / 1000, "s"
        out.append(paint(f"Total run time: {f'{spent:.3f}'.rjust(width - 5)} {unit}", "cyan", color))
    return out
