"""A management command run the way `manage.py NAME ARGS` runs it (argument parsing, a
`CommandError` printed as one line on stderr and exit status 1), but inside the test's own
process: no interpreter or Django start-up per case. For refusals that happen before the command
does any work; a command's life as a process (signals, serving, blocking reads) is tested with
a real subprocess."""

import contextlib
import io
from dataclasses import dataclass

from django.core.management import ManagementUtility


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def command_as_process(*argv: str) -> Ran:
    """`manage.py *argv` in this process; what it printed and the status it exited with."""
    stdout, stderr = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            ManagementUtility(["manage.py", *argv]).execute()
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return Ran(code, stdout.getvalue(), stderr.getvalue())
