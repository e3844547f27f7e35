"""Strict readers of environment variables, used once by settings at start-up.

A variable that is set but cannot be read as its type is an error naming the
variable and the value, never a silent fall-back to the default: a typo in a
unit file should stop the service, not quietly run it with other settings.
An unset variable takes the default; a variable set to the empty string is an
error for everything but lists (`ALLOWED_HOSTS=` means no hosts).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from django.core.exceptions import ImproperlyConfigured

_REQUIRED = object()
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_DURATION_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)?$")
_UNIT_SECONDS = {None: 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def redact_url(url: str) -> str:
    """The URL with any password replaced, for error messages and logs."""
    return re.sub(r"(://[^/@:]*:)[^/@]*@", r"\1***@", url)


class SecretMissing(LookupError):
    """A secret that is not set or cannot be read: names the variable or file, never a value."""


def read_secret(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of `name`, or the content of the file named by `name`_FILE (a Docker or systemd
    credential), its trailing newline dropped; None when neither is set. Both set is an error: which
    one wins would be a guess."""
    environ = os.environ if environ is None else environ
    value, path = environ.get(name), environ.get(f"{name}_FILE")
    if value and path:
        raise SecretMissing(f"both {name} and {name}_FILE are set: keep one")
    if value:
        return value
    if not path:
        return None
    try:
        content = Path(path).read_text().rstrip("\n")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or "not text"
        raise SecretMissing(f"{name}_FILE={path!r}: cannot read the file ({reason})") from None
    if not content.strip():
        raise SecretMissing(f"{name}_FILE={path!r} is empty")
    return content


def url_with_password(url: str, password: str) -> str:
    """`url` (redis://host...) with `password` as its credential, quoted for the URL."""
    scheme, rest = url.split("://", 1)
    userinfo, at, hostpart = rest.rpartition("@")
    user = userinfo.split(":", 1)[0] if at else ""
    return f"{scheme}://{user}:{quote(password, safe='')}@{hostpart}"


class Env:
    """Typed access to one environment mapping (os.environ by default)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ

    def _raw(self, name: str, default):
        value = self.environ.get(name)
        if value is None:
            if default is _REQUIRED:
                raise ImproperlyConfigured(f"{name} must be set")
            return None
        value = value.strip()
        if not value:
            raise ImproperlyConfigured(f"{name} is set but empty; unset it to use the default")
        return value

    def str(self, name: str, default=_REQUIRED) -> str | None:
        value = self._raw(name, default)
        return default if value is None else value

    def secret(self, name: str, default=_REQUIRED) -> str | None:
        """A secret from `name` or from the file named by `name`_FILE (see read_secret)."""
        try:
            value = read_secret(name, self.environ)
        except SecretMissing as e:
            raise ImproperlyConfigured(str(e)) from None
        if value is None:
            if default is _REQUIRED:
                raise ImproperlyConfigured(f"{name} (or {name}_FILE) must be set")
            return default
        return value

    def choice(self, name: str, default: str | object = _REQUIRED, *, choices: tuple[str, ...]) -> str:
        """One of `choices`, compared without regard to case; returned as spelled in `choices`."""
        value = self.str(name, default)
        for option in choices:
            if value.lower() == option.lower():
                return option
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}")

    def match(self, name: str, default: str | object | None = _REQUIRED, *, pattern: str, what: str) -> str | None:
        """Text that must match `pattern` entirely (described as `what` in the error)."""
        value = self.str(name, default)
        if value is not None and not re.fullmatch(pattern, value):
            raise ImproperlyConfigured(f"{name}={value!r} is not {what}")
        return value

    def bool(self, name: str, default: bool | object = _REQUIRED) -> bool:
        value = self._raw(name, default)
        if value is None:
            return default
        lowered = value.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use one of 1/0, true/false, yes/no, on/off)")

    def int(self, name: str, default: int | object = _REQUIRED, *, minimum: int | None = None) -> int:
        value = self._raw(name, default)
        if value is None:
            return default
        if not re.fullmatch(r"-?\d+", value):
            raise ImproperlyConfigured(f"{name}={value!r} is not an integer")
        number = int(value)
        if minimum is not None and number < minimum:
            raise ImproperlyConfigured(f"{name}={number} is below the minimum of {minimum}")
        return number

    def seconds(self, name: str, default: float | object = _REQUIRED, *, minimum: float = 0.0) -> float:
        """A duration: plain seconds, or a number with one unit of s, m, h, d (`48h`, `30d`)."""
        value = self._raw(name, default)
        if value is None:
            return default
        m = _DURATION_RE.match(value.lower())
        if m is None:
            raise ImproperlyConfigured(f"{name}={value!r} is not a duration (e.g. 10, 10s, 5m, 48h, 30d)")
        seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        if seconds <= minimum:
            raise ImproperlyConfigured(f"{name}={value!r} must be longer than {minimum:g} s")
        return seconds

    def list(self, name: str, default: list[str] | object = _REQUIRED) -> list[str]:
        """Comma-separated words; empty items are dropped, so `ALLOWED_HOSTS=` is an empty list."""
        value = self.environ.get(name)
        if value is None:
            if default is _REQUIRED:
                raise ImproperlyConfigured(f"{name} must be set")
            return list(default)
        return [item.strip() for item in value.split(",") if item.strip()]

    def word_or_guids(self, name: str, default: str, *, words: tuple[str, ...]) -> str | tuple[str, ...]:
        """One of `words` (as spelled there), or comma-separated node GUIDs (0x and 16 hex digits), lower-cased."""
        value = self.str(name, default)
        for word in words:
            if value.lower() == word:
                return word
        guids = tuple(item.strip().lower() for item in value.split(",") if item.strip())
        for guid in guids:
            if not re.fullmatch(r"0x[0-9a-f]{16}", guid):
                raise ImproperlyConfigured(
                    f"{name}: {guid!r} is neither one of {', '.join(words)} nor a node GUID (0x and 16 hex digits)"
                )
        return guids

    def url(self, name: str, default: str | object = _REQUIRED, *, schemes: tuple[str, ...]) -> str:
        value = self.str(name, default)
        scheme = value.split("://", 1)[0] if "://" in value else None
        if scheme not in schemes:
            shown = redact_url(value)
            raise ImproperlyConfigured(f"{name}={shown!r} is not a URL with a scheme of {', '.join(schemes)}")
        return value

    def json_object(self, name: str, default: dict | object = _REQUIRED) -> dict:
        """A JSON object (`{"symbol_errors_per_hour": 240}`); any other JSON value is an error."""
        value = self._raw(name, default)
        if value is None:
            return dict(default)
        try:
            data = json.loads(value)
        except ValueError as e:
            raise ImproperlyConfigured(f"{name}={value!r} is not valid JSON ({e})") from None
        if not isinstance(data, dict):
            raise ImproperlyConfigured(f'{name}={value!r} is not a JSON object ({{"name": value, ...}})')
        return data
