"""The second pass: calls to declared tools that a format's own parse left in the content.

Models deviate from their family's syntax: prose after (or before) a JSON call, two bare JSON
objects in a row, a lost opening tag (``...}\\n</tool_call>``), a pythonic call in a JSON
family, a fenced call next to prose. Whatever the format, the text its parse settled as content
is read again for what the request offered: a JSON object naming a declared tool with
``arguments`` or ``parameters`` (an array of them, or ``{"tool_calls": [...]}``), or a pythonic
call or list of calls of a declared tool, anywhere. A candidate becomes a call only when it is
complete, names a declared tool and its arguments parse and fit the tool's JSON Schema; anything
else stays content, verbatim. Reasoning is never read: it reaches this pass as its own item.

Streaming equals whole here too: text is held only from a possible call start (``{`` with a
call key first, ``[``, a fence, ``name(`` of a declared tool) until the text decides it; a JSON
value that cannot be a call streams through as it comes, and nothing inside it is read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import exceptions as schema_errors
from jsonschema import validators
from jsonschema.protocols import Validator
from referencing import exceptions as reference_errors

from adapters.text.base import Call, Item, Text, calls_from_any
from adapters.text.jsonscan import JsonReader, Verdict, loads, skip_ws
from adapters.text.pythonic import parse_call, parse_call_list, python_end

# The first key of an object that may be a call; any other first key makes it plain JSON.
_CALL_KEYS = frozenset(
    {"name", "arguments", "parameters", "function", "type", "id", "tool_call", "tool_calls"}
)
# Closing markup right after a recovered call is markup whose opening the model lost (or
# wrote in a form its format does not read: ``<tool_use>``, ``[TOOL_CALLS]  [...]``).
_CLOSERS = (
    "</tool_call>",
    "</function_call>",
    "</tools>",
    "</tool>",
    "</function>",
    "[/TOOL_CALLS]",
    "<|python_end|>",
)
# Opening markup right before a candidate goes with it when it is a call.
_MARKUP = r"<[A-Za-z_][\w\-]*>|<\|[a-z_]+\|>|\[[A-Z_]+\]"
_MARKUP_SO_FAR = re.compile(r"(?:<(?:[A-Za-z_][\w\-]*|\|[a-z_]*\|?)?|\[[A-Z_]*)\Z")
_FENCE = "```"
_FENCE_HEAD = re.compile(r"```[A-Za-z0-9_+\-]*[ \t]*\n")
_FENCE_HEAD_SO_FAR = re.compile(r"```[A-Za-z0-9_+\-]*[ \t]*\Z")
_TAIL_WORD = re.compile(r"[\w\-]+\Z")


class DeclaredTools:
    """The tools a request offered: their names, and whether arguments fit a tool's schema.

    A schema is compiled only when a candidate call to its tool turns up (rare), never per
    request. A schema that is itself invalid or refers outside itself cannot judge; then any
    object fits, as it would for the caller's own validation.
    """

    def __init__(self, schemas: Mapping[str, dict[str, Any]]) -> None:
        self.names = frozenset(schemas)
        self._schemas = schemas
        self._validators: dict[str, Validator | None] = {}

    @classmethod
    def unconstrained(cls, names: frozenset[str]) -> DeclaredTools:
        return cls({name: {} for name in names})

    def fits(self, call: Call) -> bool:
        if call.name not in self._validators:
            self._validators[call.name] = _validator(self._schemas.get(call.name, {}))
        validator = self._validators[call.name]
        if validator is None:
            return True
        try:
            return bool(validator.is_valid(call.arguments))
        except (schema_errors.SchemaError, reference_errors.Unresolvable):
            return True


def _validator(schema: dict[str, Any]) -> Validator | None:
    if not schema:
        return None
    try:
        validator_class = validators.validator_for(schema)
        validator_class.check_schema(schema)
    except schema_errors.SchemaError:
        return None
    return validator_class(schema)


@dataclass(frozen=True, slots=True)
class _Found:
    calls: tuple[Call, ...]
    end: int
    closers: tuple[str, ...] = ()


class _Opaque:
    """The candidate is a JSON value that cannot be a call: pass it through unread."""


_OPAQUE = _Opaque()
# What a candidate at a start is: calls, text up to an index, an opaque value, or undecided.
_Decision = _Found | int | _Opaque | None


class Recovery:
    """Reads the content items of one reply as they are settled; gives back the items with
    recovered calls in place of their text. Other items end the text before them."""

    def __init__(self, tools: DeclaredTools) -> None:
        self._tools = tools
        names = sorted(tools.names, key=len, reverse=True)
        alternatives = "|".join(re.escape(n) for n in names)
        calls = rf"\{{|\[|```|(?<![\w.])(?:{alternatives})\("
        self._call_start = re.compile(calls)
        self._starts = re.compile(f"{_MARKUP}|{calls}")
        self._heads = tuple(f"{n}(" for n in names)
        self._head = re.compile(rf"(?:{alternatives})\(")
        self._segment()

    def _segment(self) -> None:
        self._text = ""
        self._pos = 0
        self._reader = JsonReader()
        self._opaque: int | None = None  # start of a JSON value passing through
        self._closers: tuple[str, ...] = ()  # after a call: closing markup that may follow

    def feed(self, items: list[Item], *, final: bool) -> list[Item]:
        out: list[Item] = []
        for item in items:
            if isinstance(item, Text):
                self._text += item.text
                continue
            self._scan(out, final=True)
            self._segment()
            out.append(item)
        self._scan(out, final=final)
        if final:
            self._segment()
        return out

    def _scan(self, out: list[Item], *, final: bool) -> None:
        pos = self._pos
        while pos < len(self._text):
            step = self._step(pos, final, out)
            if step is None:
                break
            pos = step
        self._pos = pos

    def _step(self, pos: int, final: bool, out: list[Item]) -> int | None:
        if self._opaque is not None:
            return self._through_opaque(pos, final, out)
        if self._closers:
            return self._closer(pos, final)
        return self._next(pos, final, out)

    def _next(self, pos: int, final: bool, out: list[Item]) -> int | None:
        """Text up to the next candidate, or what the candidate at ``pos`` is."""
        text = self._text
        match = self._starts.search(text, pos)
        if match is None:
            end = len(text) if final else len(text) - self._partial(pos)
            return _emit(out, text, pos, end)
        start = match.start()
        if start > pos:
            return _emit(out, text, pos, start)
        decision = self._candidate(start, match.group(), final)
        return self._apply(decision, start, out)

    def _apply(self, decision: _Decision, start: int, out: list[Item]) -> int | None:
        if decision is None:
            return None
        if isinstance(decision, _Opaque):
            self._opaque = start
            return start
        if isinstance(decision, _Found):
            out.extend(decision.calls)
            self._closers = (*_CLOSERS, *decision.closers)
            return decision.end
        return _emit(out, self._text, start, decision)

    def _candidate(self, start: int, kind: str, final: bool) -> _Decision:
        if len(kind) > 1 and kind[0] in "<[":
            decision = self._marked(start, kind)
        elif kind == "{":
            decision = self._object(start, final)
        elif kind == "[":
            decision = self._list(start, final)
        elif kind == _FENCE:
            decision = self._fenced(start, final)
        else:
            decision = self._python_call(start, start + len(kind) - 1, final)
        if decision is None and final:
            return len(self._text)  # truncated output is never a call
        return decision

    def _marked(self, start: int, markup: str) -> _Decision:
        """Markup, then a call: the markup (and its closing tag) go with the call."""
        text = self._text
        body = skip_ws(text, start + len(markup))
        if body >= len(text):
            return None
        call = self._call_start.match(text, body)
        if call is None:
            rest = text[body:]
            undecided = self._could_be_head(rest) or _FENCE.startswith(rest)
            return None if undecided else start + len(markup)
        decision = self._candidate(body, call.group(), final=False)
        if isinstance(decision, _Found):
            closer = "</" + markup[1:] if markup[1].isalpha() else ""
            return _Found(decision.calls, decision.end, (closer,) if closer else ())
        return None if decision is None else start + len(markup)

    def _object(self, start: int, final: bool) -> _Decision:
        text, reader = self._text, self._reader
        key = skip_ws(text, start + 1)
        if key >= len(text):
            return None
        if text[key] != '"':
            return _OPAQUE
        key_end = reader.value_end(text, key)
        if key_end is Verdict.INCOMPLETE:
            return None
        if isinstance(key_end, Verdict) or _string(text[key:key_end]) not in _CALL_KEYS:
            return _OPAQUE
        return self._json(start, start)

    def _json(self, start: int, value_start: int) -> _Decision:
        """The JSON value at ``value_start`` (``start`` or inside a fence at ``start``)."""
        read = self._reader.read_value(self._text, value_start)
        if read is Verdict.INCOMPLETE:
            return None
        if isinstance(read, Verdict):
            return _OPAQUE if start == value_start else start + len(_FENCE)
        value, end = read
        calls = self._calls(value)
        if calls is not None:
            return _Found(calls, end)
        return end if start == value_start else start + len(_FENCE)

    def _list(self, start: int, final: bool) -> _Decision:
        text = self._text
        first = skip_ws(text, start + 1)
        if first >= len(text):
            return None
        if text[first] == "{":
            return self._json(start, start)
        if self._head.match(text, first) is None:
            rest = text[first:]
            undecided = self._could_be_head(rest) or _MARKUP_SO_FAR.match(text, start)
            return None if undecided else start + 1
        end = python_end(text, start)
        if end is Verdict.INCOMPLETE:
            return None
        if isinstance(end, Verdict):
            return start + 1
        calls = parse_call_list(text[start:end], self._tools.names)
        return self._fitting(calls, end)

    def _python_call(self, start: int, paren: int, final: bool) -> _Decision:
        end = python_end(self._text, paren)
        if end is Verdict.INCOMPLETE:
            return None
        if isinstance(end, Verdict):
            return paren + 1
        call = parse_call(self._text[start:end], self._tools.names)
        return self._fitting(None if call is None else (call,), end)

    def _fenced(self, start: int, final: bool) -> _Decision:
        """A fenced block holding exactly a call (or calls): the fence goes with the call."""
        text = self._text
        head = _FENCE_HEAD.match(text, start)
        if head is None:
            return None if _FENCE_HEAD_SO_FAR.match(text, start) else start + len(_FENCE)
        body = skip_ws(text, head.end())
        if body >= len(text):
            return None
        found = self._json(start, body) if text[body] in "{[" else start + len(_FENCE)
        if not isinstance(found, _Found):
            return found
        close = skip_ws(text, found.end)
        if text.startswith(_FENCE, close):
            return _Found(found.calls, close + len(_FENCE))
        if _FENCE.startswith(text[close:]):
            return None
        return start + len(_FENCE)

    def _calls(self, value: Any) -> tuple[Call, ...] | None:
        if not _names_arguments(value):
            return None
        calls = calls_from_any(value, self._tools.names)
        if calls is None or not all(self._tools.fits(c) for c in calls):
            return None
        return calls

    def _fitting(self, calls: tuple[Call, ...] | None, end: int) -> _Found | int:
        if calls is not None and all(self._tools.fits(c) for c in calls):
            return _Found(calls, end)
        return end

    def _through_opaque(self, pos: int, final: bool, out: list[Item]) -> int | None:
        assert self._opaque is not None
        end = self._reader.value_end(self._text, self._opaque)
        if end is Verdict.INCOMPLETE:
            if not final:
                return _emit(out, self._text, pos, len(self._text))
            end = len(self._text)
        elif isinstance(end, Verdict):
            end = max(pos, self._reader.invalid_at(self._opaque) or pos)
        self._opaque = None
        _emit(out, self._text, pos, end)
        return end

    def _closer(self, pos: int, final: bool) -> int | None:
        """After a call: its closing markup, or the ``;`` before the next call (Llama 3)."""
        text, closers = self._text, self._closers
        after = skip_ws(text, pos)
        for closer in closers:
            if text.startswith(closer, after):
                self._closers = ()
                return after + len(closer)
        rest = text[after:]
        if not final and any(c.startswith(rest) for c in closers):
            return None
        if rest.startswith(";"):
            following = skip_ws(text, after + 1)
            if following >= len(text) and not final:
                return None
            if text.startswith("{", following):
                decision = self._candidate(following, "{", final)
                if decision is None:
                    return None
                if isinstance(decision, _Found):
                    return following
        self._closers = ()
        return pos

    def _partial(self, pos: int) -> int:
        """How much of the text's end could still start a candidate: a fence, ``name(``."""
        text = self._text
        if text.endswith("``"):
            return 2
        if text.endswith("`"):
            return 1
        markup = _MARKUP_SO_FAR.search(text, pos)
        if markup is not None:
            return len(markup.group())
        word = _TAIL_WORD.search(text, pos)
        if word is None:
            return 0
        # A name starts where the run starts (unless after a dot) or after a hyphen in it.
        starts = [word.start() + i + 1 for i, char in enumerate(word.group()) if char == "-"]
        if text[word.start() - 1 : word.start()] != ".":
            starts.insert(0, word.start())
        return next((len(text) - s for s in starts if self._could_be_head(text[s:])), 0)

    def _could_be_head(self, text: str) -> bool:
        return any(h.startswith(text) for h in self._heads)


def _names_arguments(value: Any) -> bool:
    """Whether a JSON value is shaped like calls that give their arguments (a name alone, as
    in ``{"name": "search"}``, is a mention, not a call)."""
    if isinstance(value, list):
        return bool(value) and all(_names_arguments(v) for v in value)
    if not isinstance(value, dict):
        return False
    for wrapper in ("tool_calls", "tool_call", "function"):
        if wrapper in value:
            return _names_arguments(value[wrapper])
    return "arguments" in value or "parameters" in value


def _string(token: str) -> str | None:
    try:
        value = loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _emit(out: list[Item], text: str, start: int, end: int) -> int | None:
    if end <= start:
        return None
    if out and isinstance(out[-1], Text):
        out[-1] = Text(out[-1].text + text[start:end])
    else:
        out.append(Text(text[start:end]))
    return end
