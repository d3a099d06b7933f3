"""OpenTelemetry, the ``otel`` extra (``pip install 'toolnexus[otel]'``): every piece of it that
:mod:`toolnexus.trace` uses, the OTLP/HTTP exporter and the ``requests`` types it speaks, imported
here at the top. This module is loaded at one place, :func:`toolnexus.trace.otel`, which turns its
absence into a :class:`~toolnexus.errors.MissingExtra` naming the extra."""

from __future__ import annotations

import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from requests.structures import CaseInsensitiveDict

__all__ = [
    "CaseInsensitiveDict",
    "OTLPSpanExporter",
    "ReadableSpan",
    "requests",
    "Resource",
    "SpanContext",
    "SpanKind",
    "Status",
    "StatusCode",
    "TraceFlags",
]
