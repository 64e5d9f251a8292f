"""One parameter of a stage or a strategy: name, type, default, valid range and a line of help.

Usage::

    K = Param("k", float, 60.0, "the rank constant", low=0.0, low_open=True)
    K.read("20")          # 20.0, from the text of a strategy string
    K.check(-1.0)         # UsageError: k must be > 0, got -1.0
    K.range_text()        # "> 0"

The grammar, its validation, ``eval run --help`` and the key tables of
docs/strategies.md are all read from these objects. A plain class (no
dataclasses): ``retrieve --strategy`` reads it on its lean start.
"""

from __future__ import annotations

import math

from vaulteval.errors import UsageError

TYPE_NAMES = {int: "int", float: "float", str: "string"}


class Param:
    """A named, typed, range-checked setting; ``aliases`` map old spellings to a choice."""

    __slots__ = ("name", "type", "default", "help", "low", "high", "low_open", "high_open", "choices",
                 "aliases", "default_text", "note")

    def __init__(self, name: str, type: type, default: object, help: str, *, low: float | None = None,
                 high: float | None = None, low_open: bool = False, high_open: bool = False,
                 choices: tuple[str, ...] = (), aliases: dict[str, str] | None = None,
                 default_text: str | None = None, note: str = ""):
        self.name, self.type, self.default, self.help = name, type, default, help
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open
        self.choices, self.aliases = choices, aliases or {}
        self.default_text = default_text  # how the docs show a default that is computed (a model, a host)
        self.note = note  # a rule the range column cannot say ("only with analyzer=english")

    def read(self, text: str, context: str = "") -> object:
        """The value of ``KEY=text`` in a strategy string (UsageError names the string in ``context``)."""
        try:
            value = self.type(text) if self.type is not str else text
        except ValueError:
            raise UsageError(f"{context}{self.name}={text!r} is not a valid {self.type.__name__}") from None
        try:
            return self.check(value)
        except UsageError as exc:
            raise UsageError(f"{context}{exc}") from None

    def check(self, value: object) -> object:
        """``value`` in its normal type, or UsageError saying what is allowed."""
        if value is None and self.default is None:
            return None
        if self.type is str:
            if not isinstance(value, str):
                raise UsageError(f"{self.name} must be a string, got {value!r}")
            value = self.aliases.get(value, value)
            if self.choices and value not in self.choices:
                raise UsageError(f"{self.name} must be one of {', '.join(self.choices)}, got {value!r}")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                self.type is int and not float(value).is_integer()):
            raise UsageError(f"{self.name} must be a {self.type.__name__}, got {value!r}")
        value = self.type(value)
        if not math.isfinite(value) or not self._in_range(value):
            raise UsageError(f"{self.name} must be {self.range_words()}, got {value!r}")
        return value

    def _in_range(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def range_text(self) -> str:
        """``"0 … 1"``, ``"> 0"``, ``"≥ 0"``, ``"(0, 600]"`` or the choices."""
        if self.choices:
            return ", ".join(f"`{c}`" for c in self.choices)
        low, high = _fmt(self.low), _fmt(self.high)
        if self.low is None and self.high is None:
            return "any"
        if self.high is None:
            return f"> {low}" if self.low_open else f"≥ {low}"
        if self.low is None:
            return f"< {high}" if self.high_open else f"≤ {high}"
        if self.low_open or self.high_open:
            return f"{'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        return f"{low} … {high}"

    def range_words(self) -> str:
        """The range for an error message: ``from 0 to 1``, ``greater than 0``, ``in (0, 600]``."""
        low, high = _fmt(self.low), _fmt(self.high)
        if self.low is not None and self.high is not None:
            return f"in {self.range_text()}" if self.low_open or self.high_open else f"from {low} to {high}"
        if self.low is not None:
            return f"greater than {low}" if self.low_open else f"at least {low}"
        return f"less than {high}" if self.high_open else f"at most {high}"

    def text(self, value: object) -> str:
        """``value`` as written in a strategy string (floats with ``%g``)."""
        return _fmt(value)

    def __repr__(self) -> str:
        return f"Param({self.name!r}, {self.type.__name__}, default={self.default!r})"


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
