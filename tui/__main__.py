"""``python -m tui``: the app, as ``toolnexus-tui`` starts it (``--web`` starts one so for each
browser tab). ``python -m tui.app`` would run the module ``tui`` has already imported, a second
time, and runpy warns of it on stderr."""

from . import main

main()
