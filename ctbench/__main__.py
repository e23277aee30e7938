"""``python -m ctbench`` = the ``ctbench`` command."""

import sys

from .cli import main

sys.exit(main())
