"""`python -m linkcheck.cli`: the linkcheck program."""

from linkcheck.cli import run

run()
