"""Tool governance: which tools a principal may see and run, and why not.

``ToolGovernance`` is the package's one door (``build_tool_governance`` assembles it); the rest are
its parts and the types it answers in.
"""

from governance.approval_rules import ApprovalRules
from governance.build import build_tool_governance
from governance.keys import KeyDirectory, KeyState
from governance.pinning import PinningSettings
from governance.pins import PinStatus, PinView
from governance.policies import ToolPolicy, ToolPolicySettings
from governance.tool_governance import ToolGovernance
from governance.verdict import Denial, Stage, Ticket, Verdict

__all__ = [
    "ApprovalRules",
    "Denial",
    "KeyDirectory",
    "KeyState",
    "PinStatus",
    "PinView",
    "PinningSettings",
    "Stage",
    "Ticket",
    "ToolGovernance",
    "ToolPolicy",
    "ToolPolicySettings",
    "Verdict",
    "build_tool_governance",
]
