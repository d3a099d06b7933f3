"""``python -m toolnexus.cli``: the ``toolnexus`` command (a worker of ``serve --workers`` is
started so)."""

from __future__ import annotations

import sys

from . import main

sys.exit(main())
