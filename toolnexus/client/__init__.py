"""Calling A2A peers: ``A2AClient`` (``peer``) over one transport per binding (``transports``),
remote agents as tools (``agents``), and the webhook that receives a peer's push notifications
(``webhook``)."""
