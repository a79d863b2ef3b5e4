"""Keep secrets out of what model clients return, raise and record.

One rule, :func:`mask`, applies to every artefact nbagent makes (trace frames and exports, views and
saved notebooks, ``save_state()``, batch results, errors): the secret values known to this process
(those of its model clients, :func:`hold_secrets`, and the API keys set in the environment), keys and
tokens of known shapes (``sk-...``, ``Bearer ...``), ``Authorization`` values, values given as
``api-key``, and the ``user:password@`` of URLs are masked. :func:`redact` is its core (literal values
and shapes); :func:`redact_data` walks a JSON-like structure and also blanks the values of keys named
like a secret (``api_key``, ``Authorization``...). :class:`DefaultRedactor` is :func:`mask` as the
function a trace passes every stored string through (a :data:`Redactor`).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

REDACTED = "[REDACTED]"
Redactor = Callable[[str], str]
"""A function every stored string goes through before it reaches a frame or a file."""


def _credential(chars: str, symbols: str) -> str:
    """A run of ``chars`` (a regex, repeat count to add) that looks like a credential, not a word:
    it holds a digit, one of ``symbols`` followed by more of it, or a lower-to-upper case change."""
    marks = re.escape(symbols)
    return rf"(?=[{chars}]*(?:[0-9]|[{marks}][{chars}]|[a-z][A-Z]))[{chars}]"


def _word(literal: str, rest: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """A pattern for a token starting a word with ``literal`` and going on as ``rest``. The word's start
    is checked after the literal (a lookbehind) so that the regex engine looks for the literal first:
    a leading ``\\b`` made it try every position (80-170 ms per MB of text, now under 1 ms)."""
    head = f"(?i:{re.escape(literal)})" if ignore_case else re.escape(literal)
    return re.compile(rf"{head}(?<!\w{head}){rest}")


# (mark, lowered, pattern): a pattern runs only on a text holding its mark (the lowered text for the
# case-insensitive ones, tried only where it is); the others start with a literal the regex engine finds
# as fast as an ``in`` test.
_SECRET_PATTERNS: tuple[tuple[str, bool, re.Pattern[str]], ...] = (
    # Authorization header values; the scheme in any case, the credential holding a digit, a symbol
    # inside it or a lower-to-upper case change, so that "Basic arithmetic" and "Bearer tokens." stay text.
    ("bearer", True, _word("bearer", rf"\s+{_credential('A-Za-z0-9._~+/=-', '._~+/=-')}{{6,}}", ignore_case=True)),
    ("basic", True, _word("basic", rf"\s+{_credential('A-Za-z0-9+/=', '+/=')}{{8,}}", ignore_case=True)),
    ("sk-", False, _word("sk-", r"[A-Za-z0-9_\-]{8,}")),  # OpenAI, Anthropic (sk-ant-...), DeepSeek...
    ("AKIA", False, _word("AKIA", r"[0-9A-Z]{16}\b")),  # AWS access key id
    ("gh", False, re.compile(r"gh[pousr]_(?<!\wgh._)[A-Za-z0-9]{20,}")),  # GitHub
    ("xox", False, re.compile(r"xox[abprs]-(?<!\wxox.-)[A-Za-z0-9\-]{10,}")),  # Slack tokens
    ("AIza", False, _word("AIza", r"[0-9A-Za-z_\-]{35}")),  # Google API keys
    ("hf_", False, _word("hf_", r"[A-Za-z0-9]{20,}")),  # Hugging Face tokens
)


def _mask_patterns(text: str, lowered: str) -> str:
    """``text`` with the tokens of :data:`_SECRET_PATTERNS` masked (``lowered``: ``text.lower()``)."""
    if not (  # the marks of _SECRET_PATTERNS at once: most texts hold none (a loop costs ~3 us)
        "sk-" in text
        or "gh" in text
        or "hf_" in text
        or "xox" in text
        or "AKIA" in text
        or "AIza" in text
        or "bearer" in lowered
        or "basic" in lowered
    ):
        return text
    for mark, in_lowered, pattern in _SECRET_PATTERNS:
        if not in_lowered:
            if mark in text:  # ~50 ns on a short text; the regex's own scan of a long one is as fast
                text = pattern.sub(REDACTED, text)
        elif mark in lowered:
            masked = _sub_where(pattern, text, lowered, mark)
            if masked is not text:
                text, lowered = masked, masked.lower()
    return text


def _sub_where(pattern: re.Pattern[str], text: str, lowered: str, mark: str) -> str:
    """``pattern.sub(REDACTED, text)`` for a case-insensitive pattern starting with ``mark``, tried only
    where ``lowered`` holds ``mark`` (a case-insensitive scan of every position costs 60-80 ms per MB)."""
    if len(lowered) != len(text):  # a character whose lower case is longer: positions differ
        return pattern.sub(REDACTED, text)
    out: list[str] = []
    done = 0
    at = lowered.find(mark)
    while at != -1:
        found = pattern.match(text, at) if at >= done else None
        if found:
            out += (text[done:at], REDACTED)
            done = found.end()
        at = lowered.find(mark, max(at + 1, done))
    return "".join(out) + text[done:] if out else text


_SECRET_KEY = re.compile(
    r"^(x-)?(api[-_]?key|authorization|proxy-authorization|password|passwd|secret|client[-_]secret|"
    r"access[-_]token|refresh[-_]token|auth[-_]token|openai[-_]api[-_]key)$",
    re.IGNORECASE,
)
_ENV_SECRETS = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NBAGENT_API_KEY")


# The words of a name (split at ``-``, ``_``, ``.``, spaces and lower-to-upper case changes) that make
# it a secret's name wherever they are, and those that do as its last word (``X-Goog-Api-Key``,
# ``Ocp-Apim-Subscription-Key``, ``GITHUB_TOKEN``, ``GH_PAT``; not ``max_tokens`` or ``token_limit``).
_SECRET_WORDS = frozenset(
    {"secret", "secrets", "password", "passwd", "pwd", "credential", "credentials", "cookie", "authorization",
     "apikey", "passphrase"}
)  # fmt: skip
_SECRET_LAST_WORDS = frozenset({"key", "token", "pat", "auth", "jwt", "sig", "signature"})
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def is_secret_name(name: str) -> bool:
    """True for a header, field, environment variable or option name that holds a secret
    (``Authorization``, ``api-key``, ``X-Portkey-Api-Key``, ``Ocp-Apim-Subscription-Key``,
    ``GITHUB_TOKEN``, ``DB_PASSWORD``...). The one rule of nbagent's clients, configs and MCP
    workbench. A lone ``key`` (a lookup tool's argument) is not one; a lone ``token`` is."""
    if _SECRET_KEY.match(name):
        return True
    words = [word.lower() for word in _WORDS.findall(name)]
    if not words:
        return False
    if any(word in _SECRET_WORDS for word in words):
        return True
    return words[-1] in _SECRET_LAST_WORDS and (len(words) > 1 or words[-1] == "token")


_MIN_SECRET = 6  # shorter values are not masked literally (they would mask ordinary words)
_held: dict[str, None] = {}  # the secrets this process's clients hold, in the order they came
_ENV_RECHECK_S = 0.1
_fast: tuple[int, float, tuple[str, ...]] = (-1, 0.0, ())


def hold_secrets(values: Iterable[str | None]) -> None:
    """Remember secret values (a model client's key, a secret header's value, a URL's password) so
    that :func:`mask` masks them in every artefact of this process, whichever object it comes from."""
    for value in values:
        if value and len(value) >= _MIN_SECRET:
            _held[value] = None


def header_secrets(value: str) -> list[str]:
    """The secret values of a secret header's value: the value, and its credential without the scheme
    (``Bearer <token>``, ``Basic <token>``: the token alone may turn up elsewhere)."""
    scheme, _, credential = value.strip().partition(" ")
    return [value, credential.strip()] if credential.strip() and scheme.isalpha() else [value]


def process_secrets(extra: Iterable[str | None] = ()) -> tuple[str, ...]:
    """The secret values every artefact masks: ``extra``, those of :func:`hold_secrets` and the API keys
    set in the environment now, longest first."""
    return tuple(known_secrets([*extra, *_held]))


def _current_secrets() -> tuple[str, ...]:
    """:func:`process_secrets` for the views' hot path (every text they escape): made again when a
    secret is held, and the environment read again at most every ``_ENV_RECHECK_S`` seconds (reading
    it costs 2-10 us, more than masking a short text). A client holds the environment's key it uses."""
    global _fast
    count, checked, values = _fast
    now = time.monotonic()
    if count != len(_held) or now - checked > _ENV_RECHECK_S:
        values = process_secrets()
        _fast = (len(_held), now, values)
    return values


def known_secrets(extra: Iterable[str | None] = ()) -> list[str]:
    """The secret values to mask literally: ``extra`` plus the API keys set in the environment."""
    values = [*extra, *(os.environ.get(name) for name in _ENV_SECRETS)]
    return sorted({value for value in values if value and len(value) >= _MIN_SECRET}, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every literal secret and every secret-looking token replaced by ``[REDACTED]``."""
    return _redact(text, secrets, None)


def _redact(text: str, secrets: Iterable[str], lowered: str | None) -> str:
    """:func:`redact`, ``lowered`` being ``text.lower()`` if known."""
    original = text
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if lowered is None or text is not original:
        lowered = text.lower()
    return _mask_patterns(text, lowered)


def redact_data(data: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of JSON-like ``data`` with secrets masked in every string and secret-named keys blanked."""
    secret_list = list(secrets)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value, secret_list)
        if isinstance(value, dict):
            return {
                key: REDACTED if isinstance(key, str) and is_secret_name(key) and item else walk(item)
                for key, item in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [walk(item) for item in value]
        return value

    return walk(data)


_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>]+")


def _scrub_url(match: re.Match[str]) -> str:
    url = match.group(0)
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL after all
        return url
    netloc = parts.netloc.rpartition("@")[2]  # user:password@ stripped
    query = parts.query
    if query:
        pairs = [pair.partition("=") for pair in re.split(r"([&;])", query)]
        query = "".join(
            f"{name}={REDACTED}" if equals and value and _secret_param(unquote_plus(name)) else name + equals + value
            for name, equals, value in pairs
        )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _secret_param(name: str) -> bool:
    """A query parameter holding a credential: named like a secret, or ``key`` (Google's ``?key=``)."""
    return name.lower() == "key" or is_secret_name(name)


def redact_config_text(text: str, secrets: Iterable[str] = ()) -> str:
    """A string of a dumped config with no credential left: :func:`redact`'s masks, and in each URL
    its userinfo (``user:password@``) stripped and the query parameters named like a secret
    (``?api_key=...``) masked."""
    if "://" in text:
        text = _URL.sub(_scrub_url, text)
    return redact(text, secrets)


def redact_args(args: Sequence[str]) -> list[str]:
    """Command-line arguments with the value of each secret-named option masked (``--api-key sk-...``,
    ``--token=...``) and :func:`redact_config_text` applied to every argument."""
    out: list[str] = []
    masked_next = False
    for arg in args:
        if masked_next:
            out.append(REDACTED)
            masked_next = False
            continue
        name, equals, value = arg.partition("=")
        secret_option = name.startswith("-") and is_secret_name(name.lstrip("-"))
        if secret_option and equals:
            out.append(f"{name}={REDACTED}" if value else arg)
            continue
        masked_next = secret_option
        out.append(redact_config_text(arg))
    return out


_AUTHORIZATION = re.compile(
    r"""(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token)\s+)?(?!\[REDACTED\])[^\s"',;}]+""",
    re.IGNORECASE,
)
# An API key given by name (``api-key:`` and ``X-Api-Key:`` headers, ``api_key=``...): values of 8+ characters.
_API_KEY = re.compile(
    r"""(\b(?:[a-z0-9]+[-_])*api[-_]?key["']?\s*[:=]\s*["']?)(?!\[REDACTED\])[^\s"',;}]{8,}""",
    re.IGNORECASE,
)


def _mask_value(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def _scrub_userinfo(match: re.Match[str]) -> str:
    url = match.group(0)
    return _scrub_url(match) if "@" in url else url


# What a text must hold for :func:`mask_unfiltered` to change it, one of: a word of these (any case),
# one of these (this case), a literal secret. The prefilter of :func:`mask` reads them.
_ANY_CASE = ("authorization", "apikey", "api_key", "api-key", "bearer", "basic")
_THIS_CASE = ("sk-", "gh", "hf_", "xox", "AKIA", "AIza", "://")
FILTER_FROM = 4096
"""Texts at least this long go through :func:`mask`'s prefilter first (shorter ones: the scan is as cheap)."""


def _cannot_hold(text: str, secrets: Sequence[str]) -> bool:
    """Whether an ASCII ``text`` lacks a character of every mark and every secret, so that no pattern
    can match it and no secret is in it: each test is one ``memchr`` (0.01-0.02 ms per MB, where each
    substring search of :func:`mask_unfiltered` costs 0.6-2.8 ms per MB)."""
    present: dict[str, bool] = {}

    def has(char: str) -> bool:
        found = present.get(char)
        if found is None:
            found = present[char] = char in text
        return found

    for word in _ANY_CASE:
        if all(has(c) or has(c.upper()) for c in word):
            return False
    for word in (*_THIS_CASE, *secrets):
        if all(has(c) for c in word):
            return False
    return True


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate (half of a UTF-16 pair alone: no UTF-8 file, Arrow column, JSON
    document or protobuf can hold one) replaced with U+FFFD, the replacement character; ``text`` itself
    when it has none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)
    return text


def mask(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every secret masked: the one rule of every artefact (see the module's documentation).

    ``secrets`` are the literal values to mask (``None``: those of :func:`process_secrets`). The same as
    :func:`mask_unfiltered`; a long ASCII text that lacks a character of every mark a secret's pattern
    starts with and of every literal secret is given back at once (1 MB in ~0.3 ms, not 20-26 ms), and
    in an ASCII text ``Authorization`` and ``api-key`` values are looked for where those words are only.
    """
    values: Sequence[str] = _current_secrets() if secrets is None else tuple(secrets)
    if len(text) >= FILTER_FROM and text.isascii() and _cannot_hold(text, values):
        return text
    if len(text) > 2 * SLICE and not any(_has_space(value) for value in values):
        pieces = _slices(text)
        if len(pieces) > 1:
            masked = [_mask(piece, values, narrow=True) for piece in pieces]
            if all(after is before for after, before in zip(masked, pieces)):
                return text  # nothing masked: no copy of the whole text (one call, 4 ms for 5 MB)
            return "".join(masked)
    return _mask(text, values, narrow=True)


SLICE = 65_536
"""A text longer than twice this is masked in pieces of about this many characters, cut where no match
can cross: each regular expression, ``lower()`` and search is one call holding the interpreter lock
(a background thread's mask of a 5 MB text held it 10-15 ms at a time; a piece: under 0.5 ms)."""
_SPACE_RUN = re.compile(r"\s+")
# What a run of non-space may end with for a match to go on across the spaces after it: ``Bearer``,
# ``Basic``, ``token`` (``Authorization: token x``), ``Authorization`` and ``api-key`` (a quote after
# them too), ``:`` or ``=`` (their values).
_GOES_ON = ("bearer", "basic", "token", "authorization", "key", ":", "=")


def _has_space(value: str) -> bool:
    return _SPACE_RUN.search(value) is not None


def _slices(text: str) -> list[str]:
    """``text`` cut, about every :data:`SLICE` characters, where a run of spaces ends and no pattern
    can match across (see :data:`_GOES_ON`); a piece with no such place grows until one is found."""
    pieces: list[str] = []
    start = 0
    at = SLICE
    while len(text) - start > 2 * SLICE and at < len(text):
        run = _SPACE_RUN.search(text, at, at + SLICE)  # each search bounded: no whole-text scan
        if run is None:
            at += SLICE
            continue
        begin, at = run.start(), run.end()
        while at < len(text) and text[at].isspace():  # the run went on past the search's end
            at += 1
        while begin > start and text[begin - 1].isspace():
            begin -= 1
        tail = text[max(start, begin - 16) : begin].lower()
        if tail.endswith(("'", '"')):
            tail = tail[:-1]
        if at >= len(text) or begin == start or tail.endswith(_GOES_ON):
            continue
        pieces.append(text[start:at])
        start, at = at, at + SLICE
    pieces.append(text[start:])
    return pieces


def mask_unfiltered(text: str, secrets: Iterable[str] | None = None) -> str:
    """:func:`mask` without its prefilter, each pattern run over the whole text (the reference it is
    tested against)."""
    return _mask(text, secrets, narrow=False)


def _mask(text: str, secrets: Iterable[str] | None, narrow: bool) -> str:
    """:func:`mask`'s checks; ``narrow``: an ASCII text's ``Authorization`` and ``api-key`` values are
    looked for only where those words are, and URLs only where a ``://`` is (:func:`_sub_at`), not by a
    scan of every position (100-300 ms per MB of text that names them, ~45 ms for URLs)."""
    original = text
    lowered = text.lower()  # the patterns only where their words are: a scan costs 25-45 us per KB
    narrow = narrow and text.isascii()  # then the lowered text's positions are the text's
    if "authorization" in lowered:
        if narrow:
            text = _sub_at(_AUTHORIZATION, text, _authorization_starts(lowered))
        else:
            text = _AUTHORIZATION.sub(_mask_value, text)
    if "apikey" in lowered or "api_key" in lowered or "api-key" in lowered:
        if narrow:
            text = _sub_at(_API_KEY, text, _api_key_starts(text.lower() if text is not original else lowered))
        else:
            text = _API_KEY.sub(_mask_value, text)
    if "://" in text and "@" in text:  # user:password@ of URLs
        if narrow:
            text = _sub_at(_URL, text, _url_starts(text), _scrub_userinfo)
        else:
            text = _URL.sub(_scrub_userinfo, text)
    return _redact(text, _current_secrets() if secrets is None else secrets, lowered if text is original else None)


_SCHEME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")


def _url_starts(text: str) -> list[int]:
    """Where a :data:`_URL` match can start: at each letter of the scheme-like run right before a ``://``."""
    starts: list[int] = []
    for at in _occurrences(text, "://"):
        begin = at
        while begin > 0 and text[begin - 1] in _SCHEME:
            begin -= 1
        starts += (i for i in range(begin, at) if text[i].isascii() and text[i].isalpha())
    return sorted(set(starts))


def _occurrences(lowered: str, word: str) -> Iterable[int]:
    at = lowered.find(word)
    while at != -1:
        yield at
        at = lowered.find(word, at + 1)


def _authorization_starts(lowered: str) -> list[int]:
    """Where an :data:`_AUTHORIZATION` match can start: at each ``authorization``, or 6 before (``proxy-``)."""
    return sorted({start for at in _occurrences(lowered, "authorization") for start in (at - 6, at) if start >= 0})


_CHAIN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _api_key_starts(lowered: str) -> list[int]:
    """Where an :data:`_API_KEY` match can start: at each ``api``, and at the start of each name
    (``[a-z0-9]+`` then ``-`` or ``_``) of the chain of names right before it (``x-goog-api-key``)."""
    starts: set[int] = set()
    for at in _occurrences(lowered, "api"):
        starts.add(at)
        while at > 0 and lowered[at - 1] in "-_":
            name = at - 1
            while name > 0 and lowered[name - 1] in _CHAIN:
                name -= 1
            if name == at - 1:  # no name before the separator
                break
            starts.add(name)
            at = name
    return sorted(starts)


def _sub_at(
    pattern: re.Pattern[str], text: str, starts: list[int], repl: Callable[[re.Match[str]], str] = _mask_value
) -> str:
    """``pattern.sub(repl, text)`` when every match of ``pattern`` starts at one of ``starts``
    (ascending): the leftmost match from each place on, as ``sub`` finds it, tried there only."""
    out: list[str] = []
    done = 0
    for start in starts:
        if start < done:
            continue
        found = pattern.match(text, start)
        if found:
            out += (text[done:start], repl(found))
            done = found.end()
    return "".join(out) + text[done:] if out else text


def mask_data(data: Any, secrets: Iterable[str] | None = None) -> Any:
    """A copy of JSON-like ``data`` with :func:`mask` applied to every string, secret-named keys' values
    blanked, and tool arguments (a JSON object's text under ``arguments``) masked as :func:`mask_arguments`."""
    secret_list = list(_current_secrets() if secrets is None else secrets)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return mask(value, secret_list)
        if isinstance(value, dict):
            return {key: field(key, item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(item) for item in value]
        return value

    def field(key: object, item: Any) -> Any:
        if isinstance(key, str) and is_secret_name(key) and item:
            return REDACTED
        if key == "arguments" and isinstance(item, str):
            return mask_arguments(item, secret_list)
        return walk(item)

    return walk(data)


def mask_arguments(raw: str, secrets: Iterable[str] | None = None) -> str:
    """A tool call's JSON arguments with :func:`mask` applied, and the values of secret-named keys
    blanked (then written again as JSON); text that is no JSON is masked as text."""
    secret_list = list(_current_secrets() if secrets is None else secrets)
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        return mask(raw, secret_list)
    masked = redact_data(value, secret_list)
    return mask(json.dumps(masked, ensure_ascii=False) if masked != value else raw, secret_list)


class DefaultRedactor:
    """:func:`mask` with the secrets known when it is made plus ``extra`` (those of the recorded
    agents' clients): keys, bearer tokens, ``Authorization`` values, values given as ``api-key``,
    URLs' ``user:password@``; in parsed tool arguments also the values of secret-named keys."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.secrets = list(process_secrets(extra))

    def __call__(self, text: str) -> str:
        return mask(text, self.secrets)


def keep(text: str) -> str:
    """The :data:`Redactor` that keeps every string as it is (a trace made with ``redact=None``)."""
    return text
