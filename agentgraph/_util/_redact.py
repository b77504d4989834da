"""Masking secrets (always) and whatever else the user asks for (a hook) in what leaves the process.

Three things are masked without being asked:

- the value of any field whose name says it holds a secret (`Authorization`,
  `x-api-key`, `api_key`, `token`, `password`, `cookie`, `credentials`, ...),
- text that looks like a key or token wherever it appears (`sk-...`,
  `Bearer ...`, `Authorization: ...`, JSON web tokens, cloud and code-host keys),
- the exact values of secret-looking environment variables (`OPENAI_API_KEY`,
  `GIGACHAT_CREDENTIALS`, ...) and of any `secrets` given.

A hook `(field, text) -> text` then sees every remaining string, with the
dotted path of its field (`request.messages.1.content`), and may mask more,
for example personal data in messages.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ("MASK", "Redaction", "Redactor", "is_secret_name", "masked")

MASK = "***"

Redaction = Callable[[str, str], str]
"""A redaction hook: `hook(field, text)` returns `text`, masked as the user sees fit."""

_log = logging.getLogger("agentgraph.tracing")

_SECRET_NAMES = frozenset(
    {
        "authorization",
        "proxy_authorization",
        "api_key",
        "apikey",
        "x_api_key",
        "x_goog_api_key",
        "token",
        "bearer",
        "secret",
        "password",
        "passwd",
        "cookie",
        "set_cookie",
        "credential",
        "credentials",
        "private_key",
    }
)
_SECRET_SUFFIXES = (
    "_api_key",
    "_apikey",
    "_token",
    "_secret",
    "_secret_key",
    "_access_key",
    "_private_key",
    "_password",
    "_credentials",
)
_SCALARS = (str, int, float, bool, type(None))
_NUMBERS = frozenset({int, float, bool, type(None)})
_MEMO_CHARS = 64  # strings up to this long have their masked form remembered
_MEMO_SIZE = 4096  # how many; the memo starts over when full
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[-.\s]+")

_KEY_SHAPES = re.compile(
    r"""
    \bsk-[A-Za-z0-9_\-]{16,}                              # OpenAI, Anthropic and look-alikes
    | \b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})   # code-host tokens
    | \bxox[abprs]-[A-Za-z0-9\-]{10,}                     # chat-workspace tokens
    | \bAKIA[0-9A-Z]{16}\b                                # cloud access key ids
    | \bAIza[0-9A-Za-z_\-]{30,}                           # cloud API keys
    | \bhf_[A-Za-z0-9]{20,}                               # model-hub tokens
    | \beyJ[\w\-]{8,}\.[\w\-]{8,}\.[\w\-]{8,}             # JSON web tokens
    """,
    re.VERBOSE,
)
_SCHEME = re.compile(r"\b(Bearer|Basic|Token)(\s+)([A-Za-z0-9._~+/=\-]{8,})", re.IGNORECASE)
_HEADER = re.compile(
    r"""\b(authorization|proxy-authorization|x-api-key|api[-_]?key|access[-_]token|password)
    (["']?\s*[:=]\s*["']?)
    (?!\*\*\*)((?:(?:bearer|basic|token)\s+)?[^\s"',;}&]+)""",
    re.IGNORECASE | re.VERBOSE,
)
# After `api_key=` or `password:` and a space comes prose as often as a value ("pass
# api_key= or set X", "password: must be 8+ characters"): a lone plain word there is text.
# Right after the sign, or quoted, anything is a value, save the words that say there is none.
_PLAIN_WORD = re.compile(r"\(?[A-Za-z][a-z]*[.!?)]?")
_NO_VALUE = frozenset({"none", "null", "nil", "true", "false", "unset", "missing", "required"})


# Text in which none of these occurs (case aside) holds nothing the three patterns above
# would mask: one scan of the lowered text (a pattern without IGNORECASE runs several
# times faster) instead of three for the ordinary text of a trace.
_TRIGGER = re.compile(
    r"sk-|gh[pousr]_|github_pat_|xox[abprs]-|akia|aiza|hf_|eyj|bearer|basic|token"
    r"|authorization|x-api-key|api[-_]?key|access[-_]token|password"
)


def _scheme(match: re.Match[str]) -> str:
    """`Bearer <token>` masked, unless the "token" is a plain word ("Basic usage")."""
    token = match.group(3)
    random = any(c.isdigit() or c in "._~+/=-" for c in token) or any(
        c.isupper() for c in token[1:]
    )
    return f"{match.group(1)}{match.group(2)}{MASK}" if random else match.group(0)


def _header(match: re.Match[str]) -> str:
    """`api_key=<value>` with the value masked, unless what follows is a word, not a value."""
    sign, value = match.group(2), match.group(3)
    word = value.rstrip(".!?)").lower()
    if word in _NO_VALUE or not any(c.isalnum() for c in value):
        return match.group(0)
    if sign[-1].isspace() and _PLAIN_WORD.fullmatch(value):
        return match.group(0)
    return f"{match.group(1)}{sign}{MASK}"


def _flat(value: Any) -> bool:
    """True for a scalar, or a list of scalars (a path)."""
    if isinstance(value, list | tuple):
        return all(isinstance(v, _SCALARS) for v in value)
    return isinstance(value, _SCALARS)


@functools.lru_cache(maxsize=4096)  # field names repeat in every record
def is_secret_name(name: str) -> bool:
    """True when a field or header called `name` holds a secret (`X-Api-Key`, `accessToken`)."""
    key = _SEPARATORS.sub("_", _CAMEL.sub("_", name)).lower().strip("_")
    return key in _SECRET_NAMES or key.endswith(_SECRET_SUFFIXES)


def masked(text: str) -> str:
    """`text` with every built-in secret shape and secret environment value masked.

    For what leaves the process outside a trace: errors as they are built,
    printed errors, log lines.
    """
    return _plain().mask(text)


_shared: tuple[dict[Any, Any], Redactor] | None = None


def _plain() -> Redactor:
    """A redactor with no hook, rebuilt only when the environment changed since the last."""
    global _shared
    # CPython's own mapping behind os.environ compares without decoding every entry: a
    # look costs a microsecond, where reading the secrets again costs twenty.
    raw = getattr(os.environ, "_data", None)
    found = _shared
    if found is None or not isinstance(raw, dict) or found[0] != raw:
        found = _shared = ({} if not isinstance(raw, dict) else dict(raw), Redactor())
    return found[1]


def _environment_secrets() -> tuple[str, ...]:
    return tuple(
        value for name, value in os.environ.items() if len(value) >= 8 and is_secret_name(name)
    )


class Redactor:
    """Masks secrets in a plain record, then applies the user's hook to every string.

    Args:
        hook: called as `hook(field, text)` for each string after the built-in
            masking; returns the text to keep. If it raises, the string is
            masked entirely (and the error logged once): a broken hook must
            not leak what it was meant to hide.
        secrets: exact strings to mask wherever they appear.
        environment: also mask the values of environment variables whose names
            look secret (read once, here).
        keep: top-level record fields left untouched (names, numbers, paths).
    """

    __slots__ = ("_hook", "_hook_failed", "_keep", "_masks", "_secrets", "_unions")

    def __init__(
        self,
        hook: Redaction | None = None,
        *,
        secrets: Iterable[str] = (),
        environment: bool = True,
        keep: Iterable[str] = (),
    ) -> None:
        found = [s for s in secrets if s]
        if environment:
            found.extend(_environment_secrets())
        # Longest first, so a secret that contains another is masked whole.
        self._secrets = tuple(sorted(set(found), key=len, reverse=True))
        self._hook = hook
        self._hook_failed = False
        self._keep = frozenset(keep)
        self._unions: dict[Iterable[str], frozenset[str]] = {}
        self._masks: dict[str, str] = {}

    def text(self, text: str, field: str = "") -> str:
        """`text` with secrets masked and the hook applied."""
        text = self.mask(text)
        if self._hook is None:
            return text
        try:
            result = self._hook(field, text)
        except Exception as exc:
            if not self._hook_failed:
                self._hook_failed = True
                _log.error(
                    "trace redaction hook failed (%s); the value is masked entirely",
                    type(exc).__name__,
                )
            return MASK
        return result if isinstance(result, str) else MASK

    def mask(self, text: str) -> str:
        """`text` with every built-in secret shape and known secret value masked."""
        if len(text) < 6:
            return text
        if len(text) > _MEMO_CHARS:
            return self._mask(text)
        # Short strings (names, paths, ids, field names) recur in every record: each
        # is scanned once. The answer depends only on the text and this redactor's
        # secrets, which never change.
        masks = self._masks
        found = masks.get(text)
        if found is None:
            if len(masks) >= _MEMO_SIZE:
                masks.clear()
            found = masks[text] = self._mask(text)
        return found

    def _mask(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        if _TRIGGER.search(text.lower()) is None:
            return text
        text = _KEY_SHAPES.sub(MASK, text)
        text = _SCHEME.sub(_scheme, text)
        return _HEADER.sub(_header, text)

    def record(self, record: Mapping[str, Any], *, keep: Iterable[str] = ()) -> dict[str, Any]:
        """A copy of `record` with secrets masked and the hook applied.

        Top-level fields named in `keep` (or in the constructor's) skip the hook
        when they hold numbers, names or a list of names (a path): their strings
        are only checked for secrets. Any other value under such a name (a list
        of model answers, say) is redacted like the rest.
        """
        kept = self._kept(keep)
        out: dict[str, Any] = {}
        for key, value in record.items():
            kind = type(value)
            if kind is int or kind is float or kind is bool or value is None:
                # A number or a flag: masked only under a secret's name outside `keep`.
                secret = key not in kept and is_secret_name(key)
                out[key] = MASK if secret and value not in (None, True, False) else value
            elif kind is str and key in kept:
                out[key] = self.mask(value)
            elif (kind is list or kind is tuple) and key in kept:
                names = self._names(value)
                out[key] = self._value(value, key, key) if names is None else names
            elif key in kept and _flat(value):
                out[key] = self._masked(value)
            else:
                out[key] = self._value(value, key, key)
        return out

    def _kept(self, keep: Iterable[str]) -> frozenset[str]:
        """The constructor's `keep` and this call's, joined once per `keep` given."""
        if not keep:
            return self._keep
        try:
            found = self._unions.get(keep)
        except TypeError:  # an unhashable iterable: join it every time
            return self._keep.union(keep)
        if found is None:
            found = self._unions[keep] = self._keep.union(keep)
        return found

    def _names(self, value: list[Any] | tuple[Any, ...]) -> list[Any] | None:
        """`_masked(value)` for a list of scalars (a path); None if it holds anything else."""
        out: list[Any] = []
        for item in value:
            if type(item) is str:
                out.append(self.mask(item))
            elif isinstance(item, _SCALARS):
                out.append(self.mask(item) if isinstance(item, str) else item)
            else:
                return None
        return out

    def _masked(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, list | tuple):
            return [self.mask(v) if isinstance(v, str) else v for v in value]
        return value

    def _value(self, value: Any, name: str, field: str) -> Any:
        if self._hook is None:
            return self._plain(value, name)
        if is_secret_name(name) and value not in (None, "", True, False):
            return MASK
        if isinstance(value, str):
            return self.text(value, field)
        if isinstance(value, Mapping):
            # A key can be a secret too (a token used as a mapping key): it is masked like text.
            return {
                self.mask(k) if isinstance(k, str) else k: self._value(v, str(k), f"{field}.{k}")
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._value(v, "", f"{field}.{i}") for i, v in enumerate(value)]
        return value

    def _plain(self, value: Any, name: str) -> Any:
        """`_value` without a hook: the same masking, with no field paths to build."""
        if is_secret_name(name) and value not in (None, "", True, False):
            return MASK
        kind = type(value)
        if kind in _NUMBERS:  # nothing more to mask, and no need to ask what else it is
            return value
        if isinstance(value, str):
            return self.mask(value)
        if kind is dict or isinstance(value, Mapping):
            return {
                self.mask(k) if isinstance(k, str) else k: self._plain(v, str(k))
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._plain(v, "") for v in value]
        return value
