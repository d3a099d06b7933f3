"""The HTTP ground floor every other part stands on: the uvicorn host (``server``), the Host/Origin
guard (``guard``) and the bounded fetch (``fetch``) that the client, the doctor and the webhook
share. Nothing here knows A2A or MCP."""
