"""`python -m recall.cli`: the `recall` command run as a module, as the console script runs it."""

from recall.cli import main

main()
