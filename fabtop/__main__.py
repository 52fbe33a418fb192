"""``python -m fabtop``: the same entry as the ``fabtop`` command."""

import sys

from fabtop.commands.cli import main

sys.exit(main())
