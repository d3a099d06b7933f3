"""Serving a toolkit: the ASGI app, the A2A and MCP routes, tasks and their stores, the runner."""
