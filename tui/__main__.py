# PYTHON_ARGCOMPLETE_OK  (argcomplete's marker, for python -m tui)
"""``python -m tui``: the ``fabtop`` command (fabtop serve's tabs run it so)."""

import sys

from tui.main import main

sys.exit(main())
