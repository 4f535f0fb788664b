"""Secrets in text: provider keys, cloud credentials, private keys, JWTs, credentials in URLs,
secret-named assignments and high-entropy tokens.

The patterns are derived from detect-secrets 1.5.0's published plugins (aws, private_key, jwt,
github_token, gitlab_token, slack, stripe, openai, sendgrid, azure_storage_key, npm, pypi_token,
basic_auth, keyword, high_entropy_strings), with the providers' documented key prefixes added
(Anthropic, OpenAI project keys, Google API keys, GitHub fine-grained tokens). detect-secrets
itself is not used on the hot path: its scan of one 4 KB line took ~27 ms here (plugins and
filters run per line through global settings), a hundred times the budget (docs/guardrails.md).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterator

from guardrails.anchors import Text, around, literal_hits, mask_table, search

Match = tuple[str, int, int]  # (kind, start, end)

# One alternation, one pass over the text: each named group is a kind.
_PATTERNS = {
    "aws_access_key_id": r"\b(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}\b",
    # A JWT's header and payload are JSON objects, so both start with `eyJ`.
    "jwt": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
    "github_token": r"\b(?:gh[pousr]_[A-Za-z0-9_]{36}|github_pat_[A-Za-z0-9_]{60,})",
    "gitlab_token": r"\b(?:glpat|gldt|glft|glsoat|glrt|glcbt|glptt)-[A-Za-z0-9_-]{20,50}(?!\w)",
    "slack_token": r"\bxox[aboprs]-(?:\d+-)+[A-Za-z0-9]+",
    "slack_webhook": r"https://hooks\.slack\.com/services/T\w+/B\w+/\w+",
    "stripe_key": r"\b[rs]k_live_[0-9a-zA-Z]{24,}",
    "anthropic_key": r"\bsk-ant-[a-z]+\d\d-[A-Za-z0-9_-]{20,}",
    "openai_key": r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]*T3BlbkFJ[A-Za-z0-9_-]+"
    r"|\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}",
    "google_api_key": r"\bAIza[0-9A-Za-z_-]{35}(?![\w-])",
    "sendgrid_key": r"\bSG\.[\w-]{22}\.[\w-]{43}",
    "azure_storage_key": r"AccountKey=[a-zA-Z0-9+/=]{88}",
    "npm_token": r"\bnpm_[A-Za-z0-9]{36}\b",
    "pypi_token": r"\bpypi-AgE[IN][A-Za-z0-9_-]{70,}",
}
_KNOWN = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _PATTERNS.items()))

_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,30} PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]{0,16384}?-----END[A-Z0-9 ]{0,30} PRIVATE KEY(?: BLOCK)?-----)?"
    r"|PuTTY-User-Key-File-[23]"
)
# aws.{0,20}?(key|pwd|...).{0,20}?'...40...' (detect-secrets' aws plugin): the secret key itself.
_AWS_SECRET = re.compile(
    r"aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?['\"]([0-9a-zA-Z/+]{40})['\"]",
    re.IGNORECASE,
)
# scheme://user:password@host (detect-secrets' basic_auth): the password.
_URL_PASSWORD = re.compile(r"://[^{}\s/:@]+:([^{}\s/@]{3,})@")
# A secret-named key assigned a value (detect-secrets' keyword plugin, narrowed to assignments
# whose value looks like a credential, not a placeholder or a type name).
_SECRET_NAMES = (
    r"pass(?:word|wd)?|pwd|secret|secret[_-]?key|api[_-]?key|apikey|access[_-]?key|auth[_-]?key"  # noqa: S105
    r"|client[_-]?secret|private[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token"
)
_ASSIGNED = re.compile(
    rf"(?i)\b(?:[a-z0-9]+[_-])?(?:{_SECRET_NAMES})\b['\"\]]{{0,2}}\s*[:=]{{1,2}}\s*['\"]?"
    r"([^\s'\",;`}){\]]{8,})"
)
# Code, not a value: `os.environ[...`, `self.password`, `get_token(`.
_CODE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+[(\[]?.*|[A-Za-z_]\w*[(\[].*")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:[<${%*x]|none|null|true|false|string|redacted|changeme|example)"
)
# Tokens that may be random: long runs of the base64/url-safe alphabet.
_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}")
_HEX_OR_UUID = re.compile(r"[0-9a-fA-F-]+=*")
# A digest named as one (subresource integrity `sha256-...`, image digests `sha256:...`).
_DIGEST = re.compile(r"(?i).{0,8}?\b(?:sha(?:1|224|256|384|512)|md5)[-:]")
# detect-secrets' default limit for base64 strings; random hex stays below 4 and is not flagged
# (hashes and UUIDs are everywhere in tool traffic).
ENTROPY_LIMIT = 4.5

SECRET_ARGUMENT_NAMES = re.compile(rf"(?i)^(?:[a-z0-9]+[_-])?(?:{_SECRET_NAMES})$")


# The single-token patterns run on runs of at least 20 token characters only: base64, the
# url-safe alphabet, dots (JWTs), not colons (no pattern has one; timestamps and URL schemes end
# at them).
_TOKEN_MASK = mask_table(string.ascii_letters + string.digits + "+/=_.-", b"a")
_CANDIDATE = b"a" * 20
# Runs no pattern here matches, skipped at once: hex digests and ids, UUIDs, parts of timestamps
# (each: a run with no other character), and URLs (their passwords are found in context;
# Slack's webhooks are the one URL secret).
_HEX = b"0123456789abcdefABCDEF-"
_TIMESTAMP = b"0123456789.TZ+-"
_SCHEMES = (b"https:", b"http:")
# The others run around a literal they contain: (pattern, anchors, before, after, kind). The
# private key pattern is case-sensitive, so are its anchors. A password in a URL comes before an
# `@` (rare in text, while `://` is in every URL).
_IN_CONTEXT = (
    (_PRIVATE_KEY, (b"PRIVATE KEY", b"PuTTY-User-Key-File-"), 60, 17000, "private_key"),
    (_URL_PASSWORD, (b"@",), 300, 1, "url_credentials"),
)
# The names of an assignment, in lower case: five word searches, the costliest part.
_NAMES = (b"pass", b"pwd", b"secret", b"key", b"token")
# detect-secrets' aws plugin finds a 40-character key in quotes a few words after `aws`: such a
# run is one of the token runs, looked at with what comes before it.
_AWS_SECRET_BEFORE = 64


def find_secrets(text: str) -> Iterator[Match]:
    return secrets_in(Text(text))


def secrets_in(text: Text) -> Iterator[Match]:
    yield from secret_shapes_in(text)
    yield from assignments_in(text)


def secret_shapes_in(text: Text) -> Iterator[Match]:
    """The secrets known by their shape (provider keys, tokens, private keys, credentials in
    URLs), the cheap part: ~50 µs per 64 KB plus ~0.4 µs per run of 20 token characters."""
    for kind, start, end in _token_runs(text):
        if kind:
            yield kind, start, end
        else:
            yield from _in_run(text.text, start, end)
    for pattern, anchors, before, after, kind in _IN_CONTEXT:
        hits = literal_hits(text.raw, anchors)
        for match in search(pattern, text.text, around(hits, before, after, text.size)):
            group = 1 if pattern.groups else 0
            yield kind, match.start(group), match.end(group)


def _token_runs(text: Text) -> Iterator[Match]:
    """The runs of 20 token characters or more some pattern may match (kind ""): not hex (ids,
    digests, UUIDs), not a piece of a timestamp, not a URL but Slack's webhooks; and AWS secret
    keys (one loop: there may be hundreds of ids in a result)."""
    raw = text.raw
    find = raw.translate(_TOKEN_MASK).find
    at = find(_CANDIDATE)
    while at != -1:
        start, end = at, find(b" ", at)
        end = text.size if end == -1 else end
        at = find(_CANDIDATE, end)
        if end - start == 40 and _aws_secret(text, start, end):
            yield "aws_secret_access_key", start, end
        run = raw[start:end]
        if not run.strip(_HEX):
            continue
        if run.startswith(b"//") and raw.endswith(_SCHEMES, 0, start):
            if run.startswith(b"//hooks.slack.com/"):
                yield "", raw.rfind(b"h", 0, start), end  # from the scheme on
        elif run.strip(_TIMESTAMP):
            yield "", start, end


def assignments_in(text: Text) -> Iterator[Match]:
    """A secret-named key assigned a credential-like value."""
    hits = literal_hits(text.low, _NAMES)
    for match in search(_ASSIGNED, text.text, around(hits, 40, 160, text.size)):
        if _credential_like(match.group(1)):
            yield "secret_assignment", match.start(1), match.end(1)


def _aws_secret(text: Text, start: int, end: int) -> bool:
    """Whether the run is an AWS secret key: in quotes, after `aws ... key`."""
    if start == 0 or text.raw[start - 1] not in b"'\"":
        return False
    window = max(0, start - _AWS_SECRET_BEFORE)
    return any(m.span(1) == (start, end) for m in _AWS_SECRET.finditer(text.text, window, end + 1))


def _in_run(text: str, start: int, end: int) -> Iterator[Match]:
    for match in _KNOWN.finditer(text, start, end):
        yield match.lastgroup or "secret", match.start(), match.end()
    for match in _TOKEN.finditer(text, start, end):
        digest = _DIGEST.match(text, max(0, match.start() - 8), match.start() + 8)
        if digest is None and _random_looking(match.group()):
            yield "high_entropy_token", match.start(), match.end()


def secret_value(name: str, value: str) -> bool:
    """An argument or field named like a credential (``password``, ``api_key``) with a value that
    is not a placeholder: a secret wherever its text sits."""
    return SECRET_ARGUMENT_NAMES.match(name) is not None and _credential_like(value)


def _credential_like(value: str) -> bool:
    return (
        len(value) >= 8
        and " " not in value
        and _PLACEHOLDER.match(value) is None
        and _CODE.fullmatch(value) is None
    )


def _random_looking(token: str) -> bool:
    if _HEX_OR_UUID.fullmatch(token) or ("/" in token.strip("/") and token.count("/") > 2):
        return False  # hashes, UUIDs and paths
    classes = (
        any(c.isupper() for c in token),
        any(c.islower() for c in token),
        any(c.isdigit() for c in token),
    )
    return all(classes) and shannon_entropy(token) >= ENTROPY_LIMIT


def shannon_entropy(text: str) -> float:
    counts = Counter(text)
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in counts.values())
