"""Seeing and checking what crosses the wire: the doctor (``doctor``), cassettes of recorded
exchanges (``cassette``), a cassette served as a peer or diffed against a live one (``replay``)
and the pytest fixtures over both (``testing``)."""
