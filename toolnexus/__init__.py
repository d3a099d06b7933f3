"""toolnexus: serve a toolkit of skills, Python functions and remote agents as an A2A agent and an
MCP server on one port, and call any A2A peer.

The public API is what ``__all__`` names; everything else may change.
"""

from __future__ import annotations

from . import errors, mcp, trace, traffic
from .client.agents import Agent, agent_tools
from .client.conversation import Conversation, Turn, TurnState
from .client.credentials import ClientCertificate
from .client.oauth import AuthorizationCode, ClientCredentials, DeviceCode
from .client.peer import A2AClient, fetch_card
from .client.transports import Transport, register_binding
from .client.webhook import Notification, WebhookReceiver
from .debug.doctor import doctor
from .debug.report import DoctorReport, Finding
from .errors import (
    ConfigError,
    MaxTurnsError,
    ModelError,
    ModelTimeout,
    PeerError,
    RPCError,
    ToolnexusError,
)
from .events import EventBus, ServerEvent, TaskEvent, ToolCallEvent, TrafficEvent
from .llm import (
    Client,
    ConversationStore,
    FileConversationStore,
    MemoryConversationStore,
    RunResult,
    Usage,
    create_client,
    create_in_process_client,
    demo_client,
)
from .protocol.card import AgentCard, CardReport, validate_card
from .protocol.extensions import Extension
from .protocol.model import Artifact, Message, Part, Task, TaskState, TaskStatus
from .protocol.push import PushConfig
from .protocol.signing import CardSignatures, KeyError_, KeySet, SigningKey
from .serve.config import A2AConfig, Auth, MCPServeConfig, Provider
from .skills import SkillDef, SkillList, Skipped, list_skills
from .toolkit import Toolkit, create_toolkit
from .tools import (
    Answer,
    Attachment,
    Progress,
    Request,
    Tool,
    ToolContext,
    ToolResult,
    sanitize,
    tool,
)

__version__ = "0.1.0"


def load_ipython_extension(ip: object) -> None:
    """``%load_ext toolnexus``: the notebook extension (``notebook_ext``), imported only when loaded."""
    from notebook_ext import load_ipython_extension as load  # noqa: PLC0415  # the %load_ext hook: the notebook's, when a notebook loads it

    load(ip)


__all__ = [
    "A2AClient",
    "ClientCredentials",
    "DeviceCode",
    "AuthorizationCode",
    "ClientCertificate",
    "Transport",
    "register_binding",
    "Conversation",
    "Turn",
    "TurnState",
    "PushConfig",
    "SigningKey",
    "KeySet",
    "KeyError_",
    "CardSignatures",
    "WebhookReceiver",
    "Notification",
    "A2AConfig",
    "Agent",
    "AgentCard",
    "CardReport",
    "agent_tools",
    "fetch_card",
    "validate_card",
    "doctor",
    "DoctorReport",
    "Finding",
    "Artifact",
    "Auth",
    "Extension",
    "EventBus",
    "MCPServeConfig",
    "Message",
    "Part",
    "Provider",
    "ServerEvent",
    "Task",
    "TaskEvent",
    "TaskState",
    "TaskStatus",
    "ToolCallEvent",
    "TrafficEvent",
    "Answer",
    "Client",
    "ConversationStore",
    "FileConversationStore",
    "MemoryConversationStore",
    "RunResult",
    "Usage",
    "create_client",
    "create_in_process_client",
    "demo_client",
    "ConfigError",
    "MaxTurnsError",
    "ModelError",
    "PeerError",
    "ModelTimeout",
    "RPCError",
    "Request",
    "SkillDef",
    "SkillList",
    "Skipped",
    "Tool",
    "ToolContext",
    "ToolResult",
    "Attachment",
    "Progress",
    "Toolkit",
    "ToolnexusError",
    "create_toolkit",
    "list_skills",
    "sanitize",
    "tool",
    "__version__",
    "load_ipython_extension",
    "errors",
    "mcp",
    "trace",
    "traffic",
]
