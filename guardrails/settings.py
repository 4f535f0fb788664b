"""The guardrails' settings: actions per detector and direction, the rules that set them per
tool, server or bundle, and the prompts' own section."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator

from guardrails.classifier import ClassifierSettings
from guardrails.findings import Detector, Direction


class Action(StrEnum):
    """In rising order of strictness: the strictest action of any detector that found something
    decides."""

    ALLOW = "allow"  # the detector does not run
    OBSERVE = "observe"  # findings are audited and counted; nothing is changed or blocked
    REDACT = "redact"  # the matches are replaced; the tool, the model and the audit see that
    HOLD = "hold"  # the call waits for a human's approval (arguments only)
    DENY = "deny"  # the call is denied, or the result withheld


RANK = {action: rank for rank, action in enumerate(Action)}

Actions = dict[Detector, dict[Direction, Action]]

SECURE_DEFAULTS: Actions = {
    Detector.SECRETS: {Direction.ARGUMENTS: Action.HOLD, Direction.RESULTS: Action.REDACT},
    Detector.PERSONAL_DATA: {
        Direction.ARGUMENTS: Action.OBSERVE,
        Direction.RESULTS: Action.OBSERVE,
    },
    Detector.INJECTION: {Direction.ARGUMENTS: Action.ALLOW, Direction.RESULTS: Action.OBSERVE},
}


def _no_held_results(actions: Actions) -> Actions:
    for detector, by_direction in actions.items():
        if by_direction.get(Direction.RESULTS) is Action.HOLD:
            raise ValueError(
                f"{detector.value}: `hold` applies to arguments; a result is `redact`ed or denied"
            )
    return actions


class ToolGuardrails(RootModel[Actions]):
    """An admin's actions for one tool (the admin API and the Tools page), over every config
    rule: e.g. ``{"secrets": {"results": "allow"}}``."""

    @model_validator(mode="after")
    def _valid(self) -> ToolGuardrails:
        _no_held_results(self.root)
        return self


# The rule name an admin's per-tool actions are reported under.
ADMIN_RULE = "admin tool policy"


class GuardrailRule(BaseModel):
    """Actions for the tools a rule selects: one tool (``server`` and ``tool``, its name there),
    a whole ``server``, or a ``bundle``'s tools."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="shown with every denial, hold and finding it decides")
    server: str | None = None
    tool: str | None = Field(None, description="the tool's name on `server`")
    bundle: str | None = None
    actions: Actions = Field(default_factory=dict)

    @model_validator(mode="after")
    def _selects_something(self) -> GuardrailRule:
        if (self.server is None) == (self.bundle is None):
            raise ValueError("a guardrail rule names a `server` (and maybe a `tool`) or a `bundle`")
        if self.tool is not None and self.server is None:
            raise ValueError("a guardrail rule's `tool` needs its `server`")
        _no_held_results(self.actions)
        return self

    @property
    def specificity(self) -> int:
        return 2 if self.tool is not None else 1 if self.server is not None else 0

    def selects(self, server: str, tool: str, bundles: frozenset[str]) -> bool:
        if self.bundle is not None:
            return self.bundle in bundles
        return self.server == server and self.tool in (None, tool)


class PromptGuardrailSettings(BaseModel):
    """The `guardrails.prompts` section: off until it names keys or teams."""

    model_config = ConfigDict(extra="forbid")

    keys: list[str] = Field(default_factory=list, description="key names whose prompts are scanned")
    teams: list[str] = Field(
        default_factory=list, description="teams whose keys' prompts are scanned"
    )
    actions: dict[Detector, Action] = Field(
        default_factory=lambda: {
            Detector.SECRETS: Action.REDACT,
            Detector.PERSONAL_DATA: Action.OBSERVE,
            Detector.INJECTION: Action.OBSERVE,
        }
    )

    completions: bool = Field(
        False,
        description="also screen the model's whole (non-streamed) answers to these keys with the "
        "same actions; streamed answers are not screened",
    )

    @field_validator("actions")
    @classmethod
    def _no_hold(cls, actions: dict[Detector, Action]) -> dict[Detector, Action]:
        if Action.HOLD in actions.values():
            raise ValueError("a prompt cannot be held: `observe`, `redact` or `deny`")
        return actions


class GuardrailSettings(BaseModel):
    """The config file's `guardrails` section."""

    model_config = ConfigDict(extra="forbid")

    defaults: Actions = Field(
        default_factory=dict, description="actions for every tool, over the secure defaults"
    )
    rules: list[GuardrailRule] = Field(default_factory=list)
    max_scan_chars: int = Field(
        65536, ge=1024, le=4_194_304, description="characters scanned per argument set or result"
    )
    full_scan_chars: int = Field(
        8192,
        ge=1024,
        le=4_194_304,
        description="a result longer than this is scanned by every detector on its first and "
        "last half of this many characters, in between for the secrets' shapes only",
    )
    prompts: PromptGuardrailSettings = Field(default_factory=PromptGuardrailSettings)
    classifier: ClassifierSettings | None = Field(
        None, description="an external injection classifier asked about tool results over HTTP"
    )
    cut_unscanned: bool = Field(
        True,
        description="a result longer than `max_scan_chars` reaches the model cut to its scanned "
        "part (false: passed whole, the tail unscanned)",
    )

    @model_validator(mode="after")
    def _valid(self) -> GuardrailSettings:
        _no_held_results(self.defaults)
        names = [rule.name for rule in self.rules]
        if len(names) != len(set(names)):
            raise ValueError("guardrail rule names must be unique")
        return self
