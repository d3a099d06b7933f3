"""Peers that misbehave on purpose: ``toolnexus serve --quirks NAME`` (``A2AConfig.quirks``) serves
the agent as one of the peers the doctor knows from the field, so that whoever writes an A2A client
can test it against them before a user meets them.

A quirk is a layer over the real agent, outside its A2A endpoint: the tasks, skills, streams and
errors are the agent's own, and the quirk changes only what the peer it copies changed on the
wire. Nine are *personas* (the card, the method names and the answers of another kind of peer;
one at a time):

- ``0.3-only``: an a2a-sdk 0.3 server, most agents in the field;
- ``legacy``: a toolnexus port in another language (``SendMessage`` and ``GetTask`` only);
- ``hybrid``: fasta2a 2.1 (pydantic-ai) as it was seen: 0.3's method names answered in 1.0's
  shapes, timestamps without a zone, a stream that ends without its artifact;
- the frameworks' servers (issue 58), each as its source writes the wire: ``langgraph``
  (langgraph-api 0.16.7: a stream of mixed dialects, the words as cumulative status messages),
  ``strands`` and ``strands-compliant`` (strands-agents 1.62.0: the words as status-message
  deltas; or appends while ``submitted``), ``gemini-cli`` (0.25.2: the words as status messages
  only, the turn ending ``input-required``), ``beeai`` (0.1.85: the reply in the status; every
  task failing after one cancel) and ``maf`` (Microsoft Agent Framework's card on the a2a-sdk 1.3
  server: 0.3 promised, not answered).

The others combine with any persona:

- ``slow[=SECONDS]``: a send the caller waits on (blocking, or a stream) answers that late;
- ``drop-streams``: every stream is cut after its first event, the connection closed mid-body;
- ``content-type``: streams answered as ``application/x-ndjson``, one JSON answer a line.

:data:`QUIRKS` is the one registry (the CLI, its help and the docs read it); each entry says the
real peer it comes from and the official clients it broke there (``docs/guide.md`` has the
table, with what our client does). gRPC is not bent: the quirks are HTTP's.
"""

from .peer import ASKED, MAX_BODY, Asked, QuirkPeer
from .personas import Persona
from .quirk import QUIRKS, SLOW_FOR, Quirk, quirks_named

__all__ = [
    "QUIRKS",
    "Quirk",
    "QuirkPeer",
    "Asked",
    "quirks_named",
    "Persona",
    "SLOW_FOR",
    "MAX_BODY",
    "ASKED",
]
