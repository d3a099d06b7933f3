"""Every feature a card declares, probed against what the peer does (the doctor's second half).

Without ``send`` nothing is created on the peer: the card's caching headers and a conditional
request, its signatures, the extensions it requires (a call that does not activate them: refused,
or not enforced), its tenant (a call with it and one without), the extended card (asked without
credentials: it must be refused; with the user's: served), each security scheme's required
fields and whether the requirements name declared schemes, ``ListTasks`` (``nextPageToken``
always there, artifacts left out unless asked). With ``send``, on tasks the doctor makes:
``historyLength`` (0.3 reads 0 as no limit), ``ListTasks``' filters and pages, a subscribe that
answers the task first (1.0's rule), a push round trip into a local receiver (its token header and the payload's shape in the dialect),
a file part of a declared and of an undeclared input mode, and ``acceptedOutputModes``.

Each finding names the official clients it affects. The probes speak JSON-RPC, at the card's 1.0
interface (its 0.3 one where 1.0 has none); a card with neither is said to be unchecked here.
"""

from __future__ import annotations

from .extensions import required_extensions, tenant
from .files import file_parts, output_modes
from .finder import Answer, Finder, evidence, rpc, since
from .probe import Probe, task_of
from .security import enforced, schemes
from .served_card import caching, extended_card, signatures
from .tasks import history, list_filters, list_tasks
from .updates import push, subscribe

__all__ = ["Answer", "Finder", "Probe", "evidence", "probe_features", "rpc", "since"]


async def probe_features(probe: Probe, send: bool) -> None:
    """Every probe of this package (see its docstring), each finding added as it is made."""
    await caching(probe)
    await signatures(probe)
    schemes(probe)
    if not probe.where():
        probe.found(
            "info",
            "features",
            "the card offers no JSON-RPC interface: its features are not probed over other bindings",
        )
        return
    await enforced(probe)
    await required_extensions(probe)
    await tenant(probe)
    await extended_card(probe)
    await list_tasks(probe)
    if not send:
        probe.found(
            "info",
            "features",
            "historyLength, ListTasks' filters, subscribe, push, file parts and output modes are "
            "probed only with --send (they make tasks on the peer)",
        )
        return
    task = task_of(await probe.send("hello from toolnexus doctor (features)"))
    if task is None:
        probe.found("info", "features", "no task came back to probe the rest with")
        return
    await history(probe, task)
    await list_filters(probe, task)
    await subscribe(probe)
    await push(probe)
    await file_parts(probe)
    await output_modes(probe)
