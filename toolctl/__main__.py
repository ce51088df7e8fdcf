"""``python -m toolctl``: the same entry point as the ``toolctl`` script."""

from toolctl.cli import main

main()
