"""``python -m fadsl`` is the ``fadsl`` console script."""

import sys

from fadsl.cli import main

sys.exit(main())
