"""Keep secrets out of what model clients return, raise and record.

:func:`redact` masks API keys and tokens in text; :func:`redact_data` does it through any JSON-like
structure and also blanks the values of keys named like a secret (``api_key``, ``Authorization``...).
The clients pass every error message through it and the cassettes every byte they write.
:class:`DefaultRedactor` is the function a trace passes every stored string through (a
:data:`Redactor`): it also masks ``Authorization`` values and values given as ``api-key``.
"""

from __future__ import annotations

import os
import re
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


_SECRET_PATTERNS = re.compile(
    "|".join(
        (
            r"\bsk-[A-Za-z0-9_\-]{8,}",  # OpenAI, Anthropic (sk-ant-...), DeepSeek...
            # Authorization header values; the scheme in any case, the credential holding a digit, a
            # symbol inside it or a lower-to-upper case change, so that "Basic arithmetic" and
            # "Bearer tokens." stay text.
            rf"\b(?i:bearer)\s+{_credential('A-Za-z0-9._~+/=-', '._~+/=-')}{{6,}}",
            rf"\b(?i:basic)\s+{_credential('A-Za-z0-9+/=', '+/=')}{{8,}}",
            r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
            r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
            r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack tokens
            r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API keys
            r"\bhf_[A-Za-z0-9]{20,}",  # Hugging Face tokens
        )
    )
)
# Every secret pattern holds one of these (lowercased): a text without any skips the patterns, whose
# scan costs ~20 us per KB of text.
_SECRET_MARKS = ("sk-", "bearer", "basic", "akia", "_", "xox", "aiza")
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


def known_secrets(extra: Iterable[str | None] = ()) -> list[str]:
    """The secret values to mask literally: ``extra`` plus the API keys set in the environment."""
    values = [*extra, *(os.environ.get(name) for name in _ENV_SECRETS)]
    return sorted({value for value in values if value and len(value) >= 6}, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every literal secret and every secret-looking token replaced by ``[REDACTED]``."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    lowered = text.lower()
    if any(mark in lowered for mark in _SECRET_MARKS):
        text = _SECRET_PATTERNS.sub(REDACTED, text)
    return text


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


class DefaultRedactor:
    """Masks API keys (``sk-...``, the keys set in the environment and those of the recorded agents'
    clients), bearer tokens, ``Authorization`` values and values given as ``api-key``; in parsed tool
    arguments also the values of secret-named keys."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.secrets = known_secrets(extra)

    def __call__(self, text: str) -> str:
        lowered = text.lower()  # the patterns only where their words are: a scan costs 25-45 us per KB
        if "authorization" in lowered:
            text = _AUTHORIZATION.sub(_mask_value, text)
        if "api" in lowered and "key" in lowered:
            text = _API_KEY.sub(_mask_value, text)
        return redact(text, self.secrets)


def keep(text: str) -> str:
    """The :data:`Redactor` that keeps every string as it is (a trace made with ``redact=None``)."""
    return text
