"""A management command run the way `manage.py NAME ARGS` runs it (its own argument parser,
a `CommandError` printed as one line on stderr with its exit status, argparse's usage errors
with status 2), but inside the test's own process: no interpreter or Django start-up per case,
and on the test's database connection (Django's `run_from_argv` would close every connection
when it ends, the test's included). For what a command does before and without living as a
process; its life as one (signals, serving, blocking reads) is tested with a real subprocess."""

import contextlib
import io
from dataclasses import dataclass

from django.core.management import get_commands, load_command_class
from django.core.management.base import CommandError


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def command_as_process(name: str, *argv: str) -> Ran:
    """`manage.py name *argv` in this process; what it printed and the status it exited with."""
    stdout, stderr = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            command = load_command_class(get_commands()[name], name)
            parser = command.create_parser("manage.py", name)
            cmd_options = vars(parser.parse_args(list(argv)))
            args = cmd_options.pop("args", ())
            command.execute(*args, **cmd_options, stdout=stdout, stderr=stderr)
        except CommandError as exc:
            stderr.write(f"{exc.__class__.__name__}: {exc}\n")
            code = exc.returncode
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return Ran(code, stdout.getvalue(), stderr.getvalue())
