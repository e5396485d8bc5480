"""Wapiti's pattern language: its small regular expressions and its pattern lines.

Wapiti (1.5) defines its own regular expressions for ``%t`` and ``%m`` (manual,
PATTERNS)::

    .    any character            \\d \\a \\w \\l \\u \\p \\s   digit, letter, letter or digit,
    \\c   c itself (an escape)                               lower case, upper case,
    x    x itself                                           punctuation, space
    ^    first in the regex: anchored at the start     \\D \\A \\W \\L \\U \\P \\S   their complements
    $    last in the regex: anchored at the end
    *    any number of the previous character, fewest first
    ?    the previous character or nothing, the character first

Characters are bytes (a token's UTF-8 bytes), the classes those of the C locale (ASCII).
Wapiti matches by backtracking, which can take exponential time; :class:`WapitiRegex`
returns exactly Wapiti's result -- the first start position where the regex matches,
and the length Wapiti reports there, including its over-long lengths after some failed
optional characters -- by dynamic programming over (regex item, byte position): at most
(items + 1) x (length + 1) steps for a token, whatever the regex. A regex and a token
that would need more than :data:`STEP_BUDGET` steps (a long regex on a long token, as a
forged model file may bring) are a clear error (:class:`~spargel.data.safe_regex.RegexTooSlow`,
naming the pattern's file and line) instead of minutes of work per token, and a regex of
more than :data:`MAX_ITEMS` items is refused when the pattern is read.

:func:`parse_wapiti_line` reads one pattern line the way Wapiti does: a ``#`` anywhere
starts a comment, trailing blanks are dropped, the first character (``u``, ``b`` or
``*``, either case) is lower-cased and belongs to the observation.
"""

from __future__ import annotations

from .safe_regex import RegexTooSlow

__all__ = ["MAX_ITEMS", "STEP_BUDGET", "WapitiRegex", "WapitiRegexError", "parse_wapiti_line", "split_wapiti_pattern"]

#: the most steps ((regex items + 1) x (token bytes + 1)) one match may take: about
#: 0.2 s in Python; ordinary patterns on ordinary tokens take a few hundred
STEP_BUDGET = 10 ** 6
#: the most items (characters, classes, each with its quantifier) a regex may have:
#: Wapiti's regexes are a few characters long, and every item costs a step per byte of
#: every token
MAX_ITEMS = 256

#: the longest token :meth:`WapitiRegex.test` hands to Python's ``re`` (longer ones go
#: through the step-budgeted matcher)
RE_MAX_BYTES = 256

_ANY, _CHAR, _CLASS = range(3)
_NONE, _STAR, _OPT = range(3)

_SPACE = frozenset(b" \t\n\v\f\r")
_DIGIT = frozenset(b"0123456789")
_LOWER = frozenset(b"abcdefghijklmnopqrstuvwxyz")
_UPPER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ALPHA = _LOWER | _UPPER
_PUNCT = frozenset(c for c in range(33, 127) if c not in _ALPHA and c not in _DIGIT)
_CLASSES = {"d": _DIGIT, "a": _ALPHA, "w": _ALPHA | _DIGIT, "l": _LOWER, "u": _UPPER,
            "p": _PUNCT, "s": _SPACE}


class WapitiRegexError(ValueError):
    """A regex Wapiti cannot match (a ``*`` or ``?`` with nothing before it, ...)."""


class WapitiRegex:
    """One compiled Wapiti regular expression.

    >>> r = WapitiRegex(r"^\\u\\u*$")
    >>> r.test(b"ABC"), r.test(b"AbC"), r.test(b"")
    (True, False, False)
    >>> WapitiRegex(".?.?$").match(b"Hello")   # (start, length)
    (3, 2)
    >>> WapitiRegex(r"\\d*").match(b"123")      # '*' takes as few as it can
    (0, 0)
    """

    __slots__ = ("pattern", "anchored", "items", "dollar", "where", "_re")

    def __init__(self, pattern: str, where=("<template>", None)):
        self.pattern = pattern
        self.where = where
        self._re = None
        re = pattern.encode("utf-8", "surrogateescape")
        self.anchored = re[:1] == b"^"
        p = 1 if self.anchored else 0
        items = []
        self.dollar = False
        n = len(re)
        while p < n:
            if re[p:] == b"$":
                self.dollar = True
                break
            c = re[p]
            if c in b"*?":
                raise WapitiRegexError(f"unescaped {chr(c)!r} with no character before it in "
                                       f"{pattern!r} (write \\{chr(c)} for the character)")
            if c == ord("\\"):
                if p + 1 >= n:
                    raise WapitiRegexError(f"{pattern!r} ends with a lone backslash")
                e = chr(re[p + 1])
                if e in _CLASSES:
                    item = (_CLASS, _CLASSES[e], True)
                elif e.lower() in _CLASSES:
                    item = (_CLASS, _CLASSES[e.lower()], False)
                else:
                    item = (_CHAR, re[p + 1], True)
                p += 2
            elif c == ord("."):
                item = (_ANY, None, True)
                p += 1
            else:
                item = (_CHAR, c, True)
                p += 1
            quant = _NONE
            if p < n and re[p] in b"*?":
                quant = _STAR if re[p] == ord("*") else _OPT
                p += 1
            items.append(item + (quant,))
            if len(items) > MAX_ITEMS:
                raise WapitiRegexError(f"the regex {_short(pattern)!r} has more than {MAX_ITEMS} items "
                                       f"(characters or classes); Wapiti's regexes are short")
        self.items = items

    def __repr__(self):
        return f"WapitiRegex({self.pattern!r})"

    def match(self, s: bytes) -> tuple[int, int] | None:
        """``(start, length)`` as Wapiti finds them, or None when the regex does not
        match. ``start + length`` can exceed ``len(s)``, as in Wapiti."""
        n = len(s)
        items = self.items
        K = len(items)
        if (K + 1) * (n + 1) > STEP_BUDGET:
            raise RegexTooSlow(
                *self.where,
                f"the Wapiti regex {_short(self.pattern)!r} ({K} items) would take "
                f"{(K + 1) * (n + 1)} steps on a token of {n} bytes (at most {STEP_BUDGET}); "
                f"shorten the regex or the token")
        # ok[k][j], d[k][j]: whether items k.. match at byte j, and by how much Wapiti's
        # length counter moves (on success or failure) -- computed from the end
        ok_next = [(j == n) if self.dollar else True for j in range(n + 1)]
        d_next = [0] * (n + 1)
        for k in range(K - 1, -1, -1):
            kind, arg, positive, quant = items[k]
            ok = [False] * (n + 1)
            d = [0] * (n + 1)
            for j in range(n, -1, -1):
                if j < n:
                    c = s[j]
                    if kind == _ANY:
                        hit = True
                    elif kind == _CHAR:
                        hit = c == arg
                    else:
                        hit = (c in arg) == positive
                else:
                    hit = False
                if quant == _NONE:
                    if hit:
                        ok[j], d[j] = ok_next[j + 1], 1 + d_next[j + 1]
                    else:
                        ok[j], d[j] = False, 1
                elif quant == _STAR:
                    if ok_next[j]:
                        ok[j], d[j] = True, d_next[j]
                    elif hit:
                        ok[j], d[j] = ok[j + 1], 1 + d[j + 1]
                    else:
                        ok[j], d[j] = False, 1
                else:  # optional: with the character first, then without
                    if hit and ok_next[j + 1]:
                        ok[j], d[j] = True, 1 + d_next[j + 1]
                    elif hit:
                        ok[j], d[j] = ok_next[j], d_next[j + 1] + d_next[j]
                    else:
                        ok[j], d[j] = ok_next[j], d_next[j]
            ok_next, d_next = ok, d
        if self.anchored:
            return (0, d_next[0]) if ok_next[0] else None
        for j in range(n + 1):
            if ok_next[j]:
                return j, d_next[j]
        return None

    def test(self, s: bytes) -> bool:
        """Whether the regex matches (``%t``): a search with Python's ``re`` over the
        same bytes. Whether it matches does not depend on Wapiti's length counter: the
        items (bytes, classes, ``*``, ``?``, ``^``, ``$``) describe an ordinary regular
        language, and the dynamic programme of :meth:`match` computes exactly whether
        some position starts a word of it; ``re`` finds the same in C (a regex of these
        items with at most one ``*`` or ``?`` backtracks at most (length^2 x items) steps,
        used on tokens of at most :data:`RE_MAX_BYTES` bytes; other regexes and longer
        tokens go through :meth:`match`, with its step budget)."""
        rx = self._re
        if rx is None:
            quantified = sum(item[3] != _NONE for item in self.items)
            rx = self._re = _python_regex(self) if quantified <= 1 else False
        if rx is False or len(s) > RE_MAX_BYTES:
            return self.match(s) is not None
        return rx.search(s) is not None


def _python_regex(rx):
    """The bytes regex of Python's ``re`` that accepts what ``rx`` (a
    :class:`WapitiRegex`) accepts, searched from every position (or the first, ``^``)."""
    import re

    def byte_set(values):
        return "".join(f"\\x{c:02x}" for c in sorted(values))

    parts = ["\\A" if rx.anchored else ""]
    for kind, arg, positive, quant in rx.items:
        if kind == _ANY:
            piece = "[\\x00-\\xff]"
        elif kind == _CHAR:
            piece = f"\\x{arg:02x}"
        else:
            piece = f"[{'' if positive else '^'}{byte_set(arg)}]"
        parts.append(piece + ("*?" if quant == _STAR else "?" if quant == _OPT else ""))
    if rx.dollar:
        parts.append("\\Z")
    return re.compile("".join(parts).encode("ascii"))


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _c_space(c: str) -> bool:
    return c in " \t\n\v\f\r"


def parse_wapiti_line(raw: str) -> str | None:
    """The pattern of one line as Wapiti keeps it, or None for a blank / comment line.

    >>> parse_wapiti_line('U:wrd=%X[0,0]  # the word')
    'u:wrd=%X[0,0]'
    >>> parse_wapiti_line('*:p=%t[0,0,"#"]')    # even inside quotes
    '*:p=%t[0,0,"'
    """
    line = raw.rstrip("\n")
    end = line.find("#")
    if end < 0:
        end = len(line)
    while end and _c_space(line[end - 1]):
        end -= 1
    if end == 0:
        return None
    line = line[:end]
    first = line[0].lower() if line[0].isascii() else line[0]
    return first + line[1:]


def _scan_int(s: str, i: int, auto_base: bool) -> tuple[int, int] | None:
    """C's ``sscanf`` ``%i`` (``auto_base``: 0x.. hex, 0.. octal) or ``%u`` at ``s[i]``:
    (value, next index) or None."""
    n = len(s)
    while i < n and _c_space(s[i]):
        i += 1
    sign = 1
    if i < n and s[i] in "+-":
        sign = -1 if s[i] == "-" else 1
        i += 1
    base, digits = 10, "0123456789"
    if auto_base and s[i:i + 2].lower() == "0x" and i + 2 < n and s[i + 2] in "0123456789abcdefABCDEF":
        base, digits, i = 16, "0123456789abcdefABCDEF", i + 2
    elif auto_base and s[i:i + 1] == "0":
        base, digits = 8, "01234567"
    start = i
    while i < n and s[i] in digits:
        i += 1
    if i == start:
        return None
    return sign * int(s[start:i], base), i


def split_wapiti_pattern(line: str):
    """Cut a pattern (as :func:`parse_wapiti_line` returns it) into literal pieces and
    commands ``(op, caps, absolute, offset, column, regex_text)``, as Wapiti compiles it;
    raises :class:`WapitiRegexError` where Wapiti stops with an error.

    >>> split_wapiti_pattern('u:a=%X[@1, 0]/%t[-1,1,"^x"]')
    (['u:a=', '/', ''], [('x', True, True, 1, 0, None), ('t', False, False, -1, 1, '^x')])
    """
    if line[0] not in "ub*":
        raise WapitiRegexError(f"unknown pattern type {line[0]!r} (a pattern starts with u, b or *)")
    literals, commands, piece = [], [], []
    pos, n = 0, len(line)
    while pos < n:
        if line[pos] != "%":
            piece.append(line[pos])
            pos += 1
            continue
        letter = line[pos + 1] if pos + 1 < n else ""
        op = letter.lower()
        if op not in ("x", "t", "m") or not letter:
            raise WapitiRegexError(f"unknown command type '%{letter}' at column {pos + 1}")
        pos += 2
        absolute = line[pos:pos + 2] == "[@"
        if not absolute and line[pos:pos + 1] != "[":
            raise WapitiRegexError(f"invalid pattern: '[' expected at column {pos + 1}")
        got = _scan_int(line, pos + (2 if absolute else 1), True)
        if got is None or got[1] >= n or line[got[1]] != ",":
            raise WapitiRegexError(f"invalid pattern: %{letter}[offset,column] expected at "
                                   f"column {pos - 1}")
        offset, q = got
        got = _scan_int(line, q + 1, False)
        if got is None or got[0] < 0:
            raise WapitiRegexError(f"invalid pattern: a column number expected at column {q + 2}")
        column, pos = got
        regex = None
        if op in ("t", "m"):
            if line[pos:pos + 2] != ',"':
                raise WapitiRegexError(f"missing argument: %{letter} needs ,\"regex\" at column "
                                       f"{pos + 1}")
            pos += 2
            start = pos
            while pos < n and line[pos] != '"':
                pos += 2 if line[pos] == "\\" and pos + 1 < n else 1
            if pos >= n:
                raise WapitiRegexError(f"unended argument: the regex opened at column {start} "
                                       "has no closing quote")
            regex = line[start:pos]
            pos += 1
        if line[pos:pos + 1] != "]":
            raise WapitiRegexError(f"missing end of pattern: ']' expected at column {pos + 1}")
        pos += 1
        literals.append("".join(piece))
        piece = []
        commands.append((op, letter != op, absolute, offset, column, regex))
    literals.append("".join(piece))
    return literals, commands
