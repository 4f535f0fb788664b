"""Errors of the admins' tool controls, one tree (reported by the HTTP edge by type).

GatewayError (llm_service.errors)
├── ToolNotFound      no tool of that catalog name
└── ReviewConflict    the definition's review is decided already, or there is none
"""

from __future__ import annotations

from llm_service.errors import GatewayError


class ToolNotFound(GatewayError):
    pass


class ReviewConflict(GatewayError):
    pass
