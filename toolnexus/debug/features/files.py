"""Files and output modes: a file part of a declared and of an undeclared input mode, and a send's
``acceptedOutputModes``."""

from __future__ import annotations

import base64

from .probe import Probe, task_of


async def file_parts(probe: Probe) -> None:
    """A file part of a declared input mode is taken; one of an undeclared mode is refused (-32005)."""
    modes = [str(m) for m in probe.card.raw.get("defaultInputModes") or [] if isinstance(m, str)]
    declared = next((m for m in modes if "/" in m and not m.startswith("text/")), None)
    before = probe.mark()
    if declared is not None:
        part = {"raw": base64.b64encode(b"toolnexus doctor").decode(), "mediaType": declared}
        part["filename"] = "doctor.bin"
        taken = await probe.send("", part)
        if task_of(taken) is None:
            probe.found(
                "warning",
                "file parts",
                f"a file part of {declared} (an input mode the card declares) got "
                f"{taken.got if taken else None}",
                before,
                ["clients that send files (a2a-sdk 1.x, JS SDK 1.x, toolnexus send --file)"],
                "take file parts of the declared input modes",
            )
        else:
            probe.found("ok", "file parts", f"a file part of {declared} is taken")
    if "*/*" in modes or not modes:
        return
    odd = {
        "raw": base64.b64encode(b"toolnexus doctor").decode(),
        "mediaType": "application/x-toolnexus-doctor",
    }
    refused = await probe.send("", odd)
    if refused is not None and refused.got == -32005:
        probe.found("ok", "file parts", "a part of an undeclared media type is refused (-32005)")
    elif task_of(refused) is not None:
        probe.found(
            "info",
            "file parts",
            "a part of a media type the card does not declare is taken all the same (the "
            "official SDK server checks only when told to: validate_input_modes)",
            before,
            fix="refuse parts outside the declared input modes with -32005 (ContentTypeNotSupported)",
        )


async def output_modes(probe: Probe) -> None:
    """``acceptedOutputModes``: a send accepting only a mode the agent does not produce."""
    before = probe.mark()
    answer = await probe.send(
        "hello from toolnexus doctor (output modes)",
        acceptedOutputModes=["application/x-toolnexus-none"],
    )
    if answer is not None and answer.got == -32005:
        probe.found(
            "ok", "output modes", "a send accepting no mode it produces is refused (-32005)"
        )
        return
    task = task_of(answer)
    if task is None:
        return
    probe.found(
        "info",
        "output modes",
        "a send that accepts only application/x-toolnexus-none was answered anyway: "
        "acceptedOutputModes is not honoured (neither the official SDK server nor toolnexus does)",
        before,
        fix="answer in an accepted mode, or refuse with -32005 (A2A 1.0 §3.2.2)",
    )
