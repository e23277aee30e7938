"""``python -m ctbench.cli`` (as before the package split)."""

import sys

from . import main

sys.exit(main())
