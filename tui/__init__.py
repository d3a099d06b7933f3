from .app import main as run

"""toolnexus-tui: host servers, watch every task's lifecycle live, talk to any A2A peer.

The app only subscribes to the library's bus and calls the library; it holds no protocol
knowledge of its own (see ``toolnexus.hosting``).
"""

__all__ = ["main"]


def main() -> None:
    run()
