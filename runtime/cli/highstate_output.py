"""The highstate outputter: Salt's human report of a state run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.cli.output import nested, paint


def _color_for(ret: Mapping[str, Any]) -> str:
    if ret.get("result") is False:
        return "red"
    if ret.get("result") is None:
        return "yellow"
    if ret.get("changes"):
        return "cyan"
    return "green"


def _split_tag(key: str) -> tuple[str, str, str, str]:
    parts = key.split("_|-")
    if len(parts) == 4:
        return parts[0], parts[1], parts[2], parts[3]
    return key, key, key, ""


def _changes_text(changes: Any, color: bool) -> str:
    if not changes:
        return ""
    lines = []
    if isinstance(changes, dict) and isinstance(changes.get("diff"), str):
        rest = {k: v for k, v in changes.items() if k != "diff"}
        lines.append(" " * 14 + "----------")
        lines.append(" " * 14 + "diff:")
        for line in changes["diff"].splitlines():
            shade = "green" if line.startswith("+") else "red" if line.startswith("-") else "reset"
            text = " " * 18 + line
            lines.append(paint(text, shade, color) if shade != "reset" else text)
        if rest:
            lines.append(nested(rest, 14, color))
        return "\n".join(lines)
    return nested(changes, 14, color)


def format_state_run(minion: str, results: Any, color: bool = False, verbose: bool = True) -> tuple[str, bool]:
    """The report for one minion; returns (text, all_succeeded)."""
    out: list[str] = [paint(f"{minion}:", "cyan", color)]
    if not isinstance(results, dict):
        items = results if isinstance(results, list) else [results]
        out.append(paint("Data failed to compile:", "red", color))
        out.append("----------")
        for item in items:
            out.append(paint(f"    {item}", "red", color))
        return "\n".join(out), False
    ordered = sorted(results.items(), key=lambda kv: kv[1].get("__run_num__", 0) if isinstance(kv[1], dict) else 0)
    ok = changed = failed = 0
    total_ms = 0.0
    for key, ret in ordered:
        if not isinstance(ret, dict):
            continue
        state, sid, name, fun = _split_tag(key)
        shade = _color_for(ret)
        if ret.get("result") is False:
            failed += 1
        else:
            ok += 1
            if ret.get("changes"):
                changed += 1
        duration = ret.get("duration") or 0
        if isinstance(duration, (int, float)):
            total_ms += duration
        if not verbose and ret.get("result") is True and not ret.get("changes"):
            continue
        comment = str(ret.get("comment", "")).rstrip("\n")
        comment_lines = comment.splitlines() or [""]
        block = [
            "----------",
            f"          ID: {sid}",
            f"    Function: {state}.{fun}",
            f"        Name: {name}",
            f"      Result: {ret.get('result')}",
            f"     Comment: {comment_lines[0]}",
            *[f"              {line}" for line in comment_lines[1:]],
            f"     Started: {ret.get('start_time', '')}",
            f"    Duration: {duration} ms",
            "     Changes:   ",
        ]
        out.extend(paint(line, shade, color) for line in block)
        text = _changes_text(ret.get("changes"), color)
        if text:
            out.append(text)
    out += [
        "",
        paint(f"Summary for {minion}", "cyan", color),
        paint("-------------", "cyan", color),
        paint(f"Succeeded: {ok}" + (f" (changed={changed})" if changed else ""), "green", color),
        paint(f"Failed:    {failed}", "red" if failed else "cyan", color),
        paint("-------------", "cyan", color),
        paint(f"Total states run:     {ok + failed}", "cyan", color),
        paint(f"Total run time: {total_ms / 1000.0:>8.3f} s", "cyan", color),
    ]
    return "\n".join(out), failed == 0
