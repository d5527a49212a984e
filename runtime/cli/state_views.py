"""`saltpan compile --show top|highstate|lowstate`: the state compiler from the CLI.

Output follows Salt's state.show_top / show_highstate / show_lowstate, and so
do errors: compile errors are printed as a JSON/YAML list of strings on stdout
(what Salt returns), each also on stderr with its file:line; when the pillar
has errors nothing is printed on stdout and stderr carries salt-call's
``Error running 'state.show_...': Pillar failed to render`` form.  The highstate
and lowstate views then check each state's function and arguments
(``pipeline.check_states``): Salt prints such states and fails them when they
run; here a missing function is an error (exit 1) and an unknown argument a
warning, on stderr with the file:line of the state ID.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime import pipeline

if TYPE_CHECKING:
    from compiler.salt_functions import FunctionsFactory

_SALT_FUN = {"top": "state.show_top", "highstate": "state.show_highstate", "lowstate": "state.show_lowstate"}


def show(opts: Mapping[str, Any], minion_id: str, grains: Mapping[str, Any], what: str, out: str,
         masker: Any = None, functions: FunctionsFactory | None = None, color: bool | None = None) -> int:
    """Print one state view; ``masker`` (runtime.cli.masking.Masker) hides the pillar's secrets in it;
    ``functions``: the templates' salt table (default: offline); ``color``: the command line's choice."""
    from runtime.cli import output
    from runtime.cli.compile_inputs import report_errors

    pillar_result = pipeline.pillar_compiler(opts, functions=functions).compile(minion_id, grains)
    if pillar_result.errors or pillar_result.pillar.get("_errors"):
        print(f"Error running '{_SALT_FUN[what]}': Pillar failed to render. Additional info follows:",
              file=sys.stderr)
        for message in pillar_result.pillar.get("_errors") or []:
            print(f"- {message}", file=sys.stderr)
        report_errors(pillar_result.errors)
        return 1
    result = pipeline.compile_states(opts, minion_id, grains, pillar_result.pillar, what, all_errors=True,
                                     compiler=pipeline.state_compiler(opts, functions=functions),
                                     with_lowstate=True)
    if result.errors:
        print(output.render([e.salt_message() for e in result.errors], out, sys.stdout, color=color))
        report_errors(result.errors)
        return 1
    data = result.data
    if masker is not None:
        from runtime.cli.masking import mask_strings

        data = mask_strings(data, masker.secrets(pillar_result.pillar))
    print(output.render(data, out, sys.stdout, color=color))
    # what Salt only finds when the states run: a function saltpan lacks (error), an unknown argument
    errors, warnings = pipeline.check_states(result)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    report_errors(errors)
    return 1 if errors else 0
