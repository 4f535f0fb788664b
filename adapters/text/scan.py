"""One driver runs every format over a whole reply or a stream, with the same result.

The scanner reads left to right and *settles* text only when nothing that follows can change
what it is: content up to a possible partial marker, a call block once it is complete. A stream
rescans only the unsettled tail on each chunk, so whatever it has emitted is exactly what the
whole-reply scan produces for that part, for any chunking.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from adapters.text.base import Call, Item, Parsed, Reasoning, Text, ToolFormat
from adapters.text.jsonscan import JsonReader, Verdict, skip_ws
from adapters.text.recover import DeclaredTools, Recovery


@dataclass(frozen=True, slots=True)
class Reply:
    content: str | None
    calls: tuple[Call, ...]
    reasoning: str | None


@dataclass
class _Scanner:
    fmt: ToolFormat
    text: str
    final: bool
    declared: DeclaredTools
    leading: bool
    reader: JsonReader
    think_tags: tuple[str, str]
    items: list[Item] = field(default_factory=list)
    thinking: bool = False  # inside a reasoning block
    # The chat template may have opened reasoning: undecided until its closing tag or the end.
    opened: bool = False

    @property
    def tools(self) -> frozenset[str]:
        return self.declared.names

    def run(self, pos: int) -> int:
        """Scan from ``pos``; returns the index up to which the text is settled."""
        while pos < len(self.text):
            if self.opened:
                step = self._opened(pos)
            elif self.thinking:
                step = self._reasoning(pos)
            elif self.leading:
                step = self._leading_step(pos)
            else:
                step = self._marker_step(pos)
            if step is None:
                break
            pos = step
        return pos

    @property
    def _markers(self) -> tuple[str, ...]:
        always = (*self.think_tags, *self.fmt.end_tokens)
        return (*always, *self.fmt.markers) if self.tools else always

    def _leading_step(self, pos: int) -> int | None:
        """At the reply's start (only whitespace or reasoning so far): a whole-reply call?"""
        if not (self.tools and self.fmt.openers):
            self.leading = False
            return pos
        text = self.text
        start = skip_ws(text, pos)
        if text.startswith(self._markers, start):  # e.g. [TOOL_CALLS], though "[" opens too
            return self._marker_step(pos)
        think = self.think_tags[0]
        if text.startswith(self.fmt.openers, start):
            if not self.final:
                return None
            items = self.fmt.parse_leading(text[start:], self.tools)
            # Without its family's marker a call is as weak a sign as a recovered one: its
            # arguments must fit the tool's schema too.
            if items is not None and all(self._fits(i) for i in items):
                self._text(text[pos:start])
                self.items.extend(items)
                self.leading = False
                return len(text)
        elif not self.final and _could_start(text, start, (think, *self.fmt.openers)):
            return None  # whitespace, or the start of a marker: wait
        self.leading = False
        return pos

    def _fits(self, item: Item) -> bool:
        return not isinstance(item, Call) or self.declared.fits(item)

    def _marker_step(self, pos: int) -> int | None:
        text = self.text
        found = _find_marker(text, pos, self._markers)
        if found is None:
            end = len(text) if self.final else len(text) - _partial(text, pos, self._markers)
            if end == pos:
                return None
            self._text(text[pos:end])
            return end
        index, marker = found
        if index > pos:
            self._text(text[pos:index])
            return index
        if marker in self.think_tags:
            return self._think(index, marker)
        if marker in self.fmt.end_tokens:
            return self._end_token(index, marker)
        return self._block(index, marker)

    def _end_token(self, index: int, token: str) -> int | None:
        """Dropped at the end of the reply (with the whitespace after it); text elsewhere."""
        after = index + len(token)
        if skip_ws(self.text, after) < len(self.text):
            self._text(token)
            return after
        return len(self.text) if self.final else None

    def _block(self, index: int, marker: str) -> int | None:
        block = self.fmt.parse_block(
            self.text, index, marker, final=self.final, tools=self.tools, reader=self.reader
        )
        if isinstance(block, Parsed):
            self._calls(block.calls)
            return block.end
        if block is Verdict.INCOMPLETE and not self.final:
            return None
        self._text(marker)  # not a call: the marker is the model's text
        return index + len(marker)

    def _think(self, index: int, tag: str) -> int:
        """An opening tag starts reasoning; a closing one closes reasoning nobody opened in the
        reply (a template may have): markup, dropped."""
        self.thinking = tag == self.think_tags[0]
        return index + len(tag)

    def _opened(self, pos: int) -> int | None:
        """Reasoning up to the closing tag, when the reply has one; else the reply never was."""
        closer = self.think_tags[1]
        close = self.text.find(closer, pos)
        if close >= 0:
            self._reason(self.text[pos:close])
            self.opened = False
            return close + len(closer)
        if not self.final:
            return None
        self.opened = False
        return pos

    def _reasoning(self, pos: int) -> int | None:
        """Reasoning streams as it comes, up to a possible partial closing tag."""
        text, closer = self.text, self.think_tags[1]
        close = text.find(closer, pos)
        if close >= 0:
            self._reason(text[pos:close])
            self.thinking = False
            return close + len(closer)
        # A reply cut off while reasoning: all of it is reasoning.
        end = len(text) if self.final else len(text) - _partial(text, pos, (closer,))
        if end == pos:
            return None
        self._reason(text[pos:end])
        return end

    def _reason(self, text: str) -> None:
        if text:
            self.items.append(Reasoning(text))

    def _text(self, text: str) -> None:
        if text:
            self.items.append(Text(text))
            if not text.isspace():
                self.leading = False

    def _calls(self, calls: tuple[Call, ...]) -> None:
        self.items.extend(calls)
        self.leading = False


def _could_start(text: str, start: int, markers: tuple[str, ...]) -> bool:
    """Whether the text from ``start`` to its end is the beginning of one of the markers."""
    rest = len(text) - start
    return any(rest < len(m) and m.startswith(text[start:]) for m in markers)


def _find_marker(text: str, pos: int, markers: tuple[str, ...]) -> tuple[int, str] | None:
    """The earliest marker at or after ``pos`` (the longest one when several start there)."""
    best: tuple[int, str] | None = None
    for marker in markers:
        index = text.find(marker, pos)
        if index < 0:
            continue
        if best is None or index < best[0] or (index == best[0] and len(marker) > len(best[1])):
            best = (index, marker)
    return best


def _partial(text: str, pos: int, markers: tuple[str, ...]) -> int:
    """How many characters at the end of the text could be the start of a marker."""
    longest = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text) - pos), longest, -1):
            if text.endswith(marker[:size]):
                longest = size
                break
    return longest


def parse_reply(
    fmt: ToolFormat,
    text: str,
    tools: DeclaredTools | Collection[str],
    *,
    reasoning_open: bool = False,
    think_tags: tuple[str, str] | None = None,
) -> Reply:
    """Content, calls and reasoning of a whole reply.

    ``reasoning_open``: the chat template ended the prompt with the opening reasoning tag (QwQ,
    DeepSeek-R1), so a reply with the closing tag starts inside reasoning. ``think_tags``: the
    model's reasoning tags when they are not its format's own.
    """
    parser = StreamParser(fmt, tools, reasoning_open=reasoning_open, think_tags=think_tags)
    return _reply(parser.finish(text))


def _reply(items: list[Item]) -> Reply:
    join = ContentJoin()
    parts: list[str] = []
    for item in items:
        if isinstance(item, Text):
            parts.append(join.text(item.text))
        else:
            join.block()
    parts.append(join.finish())
    reasoning = "".join(i.text for i in items if isinstance(i, Reasoning))
    calls = tuple(i for i in items if isinstance(i, Call))
    return Reply("".join(parts) or None, calls, reasoning or None)


class StreamParser:
    """Feed text as it arrives; get back the items that are settled so far.

    The format's own parse comes first; then, when tools were declared, the recovery pass
    (``adapters.text.recover``) reads the content it settled for calls to them.
    """

    def __init__(
        self,
        fmt: ToolFormat,
        tools: DeclaredTools | Collection[str],
        *,
        reasoning_open: bool = False,
        think_tags: tuple[str, str] | None = None,
    ) -> None:
        if not isinstance(tools, DeclaredTools):
            tools = DeclaredTools.unconstrained(frozenset(tools))
        self._fmt = fmt
        self._declared = tools
        self._recovery = Recovery(tools) if tools.names else None
        self._think_tags = think_tags or fmt.think_tags
        self._text = ""
        self._pos = 0
        self._leading = True
        self._thinking = False
        self._opened = reasoning_open
        self._reader = JsonReader()  # the text only grows, so scans resume where they stopped

    def feed(self, chunk: str) -> list[Item]:
        self._text += chunk
        return self._scan(final=False)

    def reasoning_separate(self) -> None:
        """The server sends reasoning apart from the text (its reasoning parser is on): the
        text does not start inside reasoning. Only the first event can tell."""
        if not self._text:
            self._opened = False

    def finish(self, rest: str = "") -> list[Item]:
        self._text += rest
        return self._scan(final=True)

    def _scan(self, final: bool) -> list[Item]:
        scanner = _Scanner(
            self._fmt,
            self._text,
            final,
            self._declared,
            self._leading,
            self._reader,
            self._think_tags,
            thinking=self._thinking,
            opened=self._opened,
        )
        self._pos = scanner.run(self._pos)
        self._leading = scanner.leading
        self._thinking = scanner.thinking
        self._opened = scanner.opened
        if self._recovery is None:
            return scanner.items
        return self._recovery.feed(scanner.items, final=final)


class ContentJoin:
    """Content as the caller sees it: the model's text, unchanged, except the whitespace that
    only spaced out call and reasoning blocks (before a block, and after one that opens the
    reply). Whole replies and streams both go through it, so they agree for any chunking.
    """

    def __init__(self) -> None:
        self._pending = ""  # trailing whitespace, held until it is known what follows
        self._strip_leading = False
        self._emitted = False

    def text(self, text: str) -> str:
        if self._strip_leading:
            text = text.lstrip()
            if not text:
                return ""
            self._strip_leading = False
        text = self._pending + text
        body = text.rstrip()
        self._pending = text[len(body) :]
        self._emitted = self._emitted or bool(body)
        return body

    def block(self) -> None:
        """A call or reasoning block comes next."""
        self._pending = ""
        self._strip_leading = not self._emitted

    def finish(self) -> str:
        rest, self._pending = self._pending, ""
        return rest
