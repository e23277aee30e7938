"""``python -m ctbench.theory.prop31 [OUT] [--quick]``."""

from .run import _cli

_cli()
