"""Replay a cassette (see :mod:`toolnexus.debug.cassette`): as a peer, or against a live one.

**As a peer** (:class:`ReplayPeer`, ``toolnexus replay session.jsonl``): an HTTP server that answers
each request with the recorded answer of a matching recorded request, so a peer's behaviour can be
reproduced offline. How requests match (``match=``):

- ``"strict"``: the same HTTP method, path and body, but for the ids a client makes anew each time
  (the JSON-RPC request id and ``messageId``).
- ``"lenient"`` (the default): as strict, but ids the client made up itself (a ``contextId`` of its
  own ...), ``metadata`` and timestamps are ignored; ids the replay handed out (``task-1``) must
  still match, so two tasks are never confused.
- ``"method"``: the same operation (JSON-RPC method, HTTP+JSON route, or method and path).

Several recorded exchanges matching one request are answered in recorded order, the last one again
once they are used up (a client that polls more often than the recording did); a recorded
``304 Not Modified`` answers only a request that is conditional too. An answer carries
its recorded status and body, and of its recorded headers only its content type, when it is JSON
or an event stream (else plain text, never sniffed). The recorded
origin is rewritten to the replay's own in every answer (the card's URLs point at the replay), and
a JSON-RPC answer carries the live request's id. A request that matches nothing gets a clear error
(JSON-RPC -32603 naming the operation, or 404) and is listed in :attr:`ReplayPeer.misses`.

**Against a live peer** (:func:`diff`, ``toolnexus replay session.jsonl --against URL``): the
recorded requests are sent again, in order, ids mapped (a recorded ``task-1`` becomes the id the
live peer gave the task; each ``messageId`` is new), and each answer is compared with the recorded
one by **status**, by **shape** (keys and types; ids, timestamps and texts are not compared; the
values of ``kind``, ``role`` and error ``code`` are) and by each task's **sequence of settled
states** (input-required, auth-required and the terminal ones; submitted and working come and go
with timing). A poll whose recorded answer had settled is asked again until the live one settles
too (up to ``settle`` seconds). Secret headers were masked when recorded: pass them again
(``headers=``, ``--header``).
"""

from __future__ import annotations

from .against import diff
from .matching import MATCHES
from .peer import ReplayPeer, pick_origin
from .report import Difference, ReplayReport
from .server import MAX_DEPTH, MAX_REQUEST, ReplayServer

__all__ = [
    "ReplayServer",
    "ReplayPeer",
    "diff",
    "ReplayReport",
    "Difference",
    "MATCHES",
    "MAX_DEPTH",
    "MAX_REQUEST",
    "pick_origin",
]
