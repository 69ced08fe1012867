"""``python -m snapdp.cli``: the ``snapdp`` command."""

from snapdp.cli import main

main(prog_name="snapdp")
