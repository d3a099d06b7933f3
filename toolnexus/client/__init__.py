"""Calling A2A peers: ``A2AClient`` (``peer``) over one transport per binding (``transports``),
remote agents as tools (``agents``), a chat with one peer as the TUI and the notebook run it
(``conversation``), and the webhook that receives a peer's push notifications
(``webhook``)."""
