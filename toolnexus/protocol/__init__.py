"""The A2A protocol, with no I/O: the canonical model (``model``), the dialects on the wire
(``dialects``), the table of operations (``operations``), cards (``card``), push-notification
shapes (``push``), files in parts (``files``), W3C trace context (``tracecontext``) and the bindings' encodings (``jsonrpc``, ``rest``,
``grpc_binding``). Everything above it (the client, the server, the debugging tools) speaks A2A
through these."""
