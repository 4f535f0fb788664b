"""Content guardrails: detectors for secrets, personal data and instructions aimed at the model,
run in-process on tool arguments, tool results and (when enabled) model traffic.

Pure: findings are data (``Finding``), and what to do about them is a ``Screening`` the policy
decision (governance) folds into its verdict. Nothing here does I/O except the optional
``HttpClassifier``.
"""

from guardrails.classifier import ClassifierSettings, HttpClassifier
from guardrails.findings import Detector, Direction, Finding
from guardrails.policy import Guardrails, Screening
from guardrails.prompts import PromptGuard
from guardrails.scan import Scanner, redact_text, redact_value
from guardrails.settings import (
    Action,
    Actions,
    GuardrailRule,
    GuardrailSettings,
    PromptGuardrailSettings,
    ToolGuardrails,
)

__all__ = [
    "Action",
    "Actions",
    "ClassifierSettings",
    "Detector",
    "Direction",
    "Finding",
    "GuardrailRule",
    "GuardrailSettings",
    "Guardrails",
    "HttpClassifier",
    "PromptGuard",
    "PromptGuardrailSettings",
    "Scanner",
    "Screening",
    "ToolGuardrails",
    "redact_text",
    "redact_value",
]
