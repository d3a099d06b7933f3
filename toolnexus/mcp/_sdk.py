"""The official MCP SDK's client side: every piece of it that the MCP client, its OAuth, the MCP
doctor and the MCP replay use, imported here at the top. It takes a second to import, which
``import toolnexus`` does not spend: this module is loaded at one place,
:func:`toolnexus.mcp.transport.sdk`, when a client first needs it. (The server side,
:mod:`toolnexus.mcp.server`, imports the SDK at its own top: it is loaded as a whole, lazily.)"""

from __future__ import annotations

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.auth import OAuthClientProvider
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import AnyUrl, FileUrl

__all__ = [
    "AnyUrl",
    "AuthorizationCodeResult",
    "Client",
    "FileUrl",
    "httpx2",
    "ListenNotSupportedError",
    "MCPError",
    "MODERN_PROTOCOL_VERSIONS",
    "OAuthClientInformationFull",
    "OAuthClientMetadata",
    "OAuthClientProvider",
    "sse_client",
    "stdio_client",
    "StdioServerParameters",
    "streamable_http_client",
    "SubscriptionLost",
    "types",
]
