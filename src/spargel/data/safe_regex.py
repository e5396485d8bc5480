"""Regular expressions of templates (``%t``, ``%m``) that cannot hang.

A template may come from a stranger (it is stored in every model file), and Python's
``re`` is a backtracking engine: ``^(a+)+$`` takes 2^n steps on a cell of n ``a``\\ s
and a ``!``, so a 40-character token would hang labelling. Two defences, chosen per
pattern when the template is parsed:

1. **Shape check, then Python's ``re``.** The pattern is parsed (with ``re``'s own
   parser) and its worst-case backtracking cost on a cell of length n is bounded by
   ``c * n^(d+1)``: ``d`` counts the unbounded repeats (``*``, ``+``, ``{m,}``), ``c``
   multiplies the choices of short ones (``?``, ``{1,3}``) and adds up alternatives. The
   shapes behind exponential blow-up are refused outright: a repeat over anything but
   single characters (``(a+)+``, ``(a|ab)*``, ``(\\w+\\s?)*``) and backreferences --
   except a repeated group that starts with a delimiter nothing else in it can match
   (``([.,][0-9]+)*``, ``(-[A-Z][a-z]*)+``), whose iterations cannot be cut two ways.
   Every other pattern runs on ``re`` with its usual semantics, as long as the bound stays
   within :data:`STEP_BUDGET` for the cell at hand; for the common patterns (one
   unbounded repeat: ``^[A-Z][a-z]+$``, ``.*ing$``) that is any cell up to 10,000
   characters.
2. **A linear-time engine for the rest.** When the shape check refuses a pattern, or a
   cell is too long for its bound, the match is done by RE2 (``pip install
   'spargel[re2]'``, Google's ``google-re2`` package): no backtracking, time linear in
   the cell. Which engine a pattern uses depends only on the pattern (and, for cells
   over the bound, on the cell's length), so a model gives the same features wherever it
   is loaded. RE2's syntax is Python's without backreferences and look-arounds, and its
   ``\\w``, ``\\d``, ``\\s``, ``\\b`` are ASCII-only.

Without RE2, a refused pattern is a clear error when the template is parsed (naming the
template line), and a cell too long for its pattern's bound is a clear error when it is
met -- never a hang.

>>> rx = compile_regex("^[A-Z]", 0)
>>> bool(rx.search("Paris")), rx.pattern
(True, '^[A-Z]')
>>> shape_cost("^(a+)+$")
Traceback (most recent call last):
...
spargel.data.safe_regex.UnsafeRegex: a repeat over a group that contains a repeat
"""

from __future__ import annotations

import re

from ..errors import DataFormatError

try:  # Python 3.11+: the parser behind re
    from re import _constants as _c
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c
    import sre_parse as _sre_parse

__all__ = ["STEP_BUDGET", "UnsafeRegex", "RegexTooSlow", "check_nesting", "compile_re2", "compile_regex",
           "max_safe_length", "shape_cost", "re2_available"]

#: the most backtracking steps (worst case) a regex may take on one cell with ``re``
STEP_BUDGET = 10 ** 8
#: the deepest nesting of groups accepted (``re`` recurses once per level)
MAX_NESTING = 100
#: repeats whose maximum exceeds this count as unbounded (a factor n in the bound)
_SHORT = 16
_ONE_CHAR = {_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN, _c.CATEGORY}
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT} | ({_c.POSSESSIVE_REPEAT} if hasattr(_c, "POSSESSIVE_REPEAT") else set())
_ATOMIC = getattr(_c, "ATOMIC_GROUP", None)


class UnsafeRegex(ValueError):
    """A pattern whose backtracking time can grow exponentially with the cell length."""


class RegexTooSlow(DataFormatError):
    """A cell too long for a pattern's backtracking bound, and no RE2 to take over (names
    the template and the line of the pattern)."""


def _single_chars(items) -> bool:
    """True when ``items`` is a non-empty fixed sequence of one-character matchers."""
    if not len(items):
        return False
    for op, av in items:
        if op in _ONE_CHAR:
            continue
        if op is _c.SUBPATTERN and _single_chars(av[-1]):
            continue
        return False
    return True


def _cost(items):
    """(c, d): at most ``c * n**d`` ways to match ``items`` from one start position."""
    c, d = 1, 0
    for op, av in items:
        if op in (_c.GROUPREF, _c.GROUPREF_EXISTS) or op.name.startswith("GROUPREF"):
            raise UnsafeRegex("a backreference")
        if op is _c.SUBPATTERN:
            ci, di = _cost(av[-1])
        elif _ATOMIC is not None and op is _ATOMIC:
            ci, di = _cost(av)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            ci, di = _cost(av[1])
        elif op is _c.BRANCH:
            parts = [_cost(alt) for alt in av[1]]
            ci, di = sum(p[0] for p in parts), max(p[1] for p in parts)
        elif op in _REPEATS:
            lo, hi, body = av
            if hi <= 1:  # optional: like a branch between the body and nothing
                bc, bd = _cost(body)
                ci, di = bc + 1, bd
            elif _single_chars(body):
                if hi == _c.MAXREPEAT or hi > _SHORT:
                    ci, di = 1, 1
                else:
                    ci, di = hi - lo + 1, 0
            else:
                inner = _delimited_loops(body)
                if inner is None:
                    if any(o in _REPEATS for o, _ in _flatten(body)):
                        raise UnsafeRegex("a repeat over a group that contains a repeat")
                    raise UnsafeRegex("a repeat over a group that can match in several ways")
                # each iteration starts at the next delimiter: only the number of
                # iterations and the last iteration's own repeats are choices
                ci, di = 1, 1 + inner
        else:  # one character, an anchor, ...
            ci, di = 1, 0
        c, d = min(c * ci, 1 << 62), d + di
    return c, d


def _items(items):
    """The body of a group as a flat list of (op, av), groups opened."""
    out = []
    for op, av in items:
        if op is _c.SUBPATTERN:
            out.extend(_items(av[-1]))
        else:
            out.append((op, av))
    return out


def _delimited_loops(body):
    """For a repeated group like ``([.,][0-9]+)*``: when the body starts with one
    character from a small set F that nothing else in the body can match (so every
    iteration starts exactly at the next F character), the number of repeats over single
    characters inside it; None when the body is not of that shape."""
    items = _items(body)
    if not items or items[0][0] not in (_c.LITERAL, _c.IN):
        return None
    first = _finite_chars(*items[0])
    if first is None:
        return None
    loops = 0
    for op, av in items[1:]:
        if op in _REPEATS:
            lo, hi, sub = av
            if not _single_chars(sub):
                return None
            loops += 1
            parts = _items(sub)
        elif op in _ONE_CHAR:
            parts = [(op, av)]
        else:
            return None
        for pop, pav in parts:
            if any(_may_match(ch, pop, pav) for ch in first):
                return None
    return loops


def _finite_chars(op, av, limit=512):
    """The characters a LITERAL or a plain class ``[...]`` matches, if few; else None."""
    if op is _c.LITERAL:
        return [chr(av)]
    chars = []
    for o, a in av:
        if o is _c.LITERAL:
            chars.append(chr(a))
        elif o is _c.RANGE and a[1] - a[0] < limit:
            chars.extend(chr(x) for x in range(a[0], a[1] + 1))
        else:
            return None  # negated, a category, ...: not a small finite set
        if len(chars) > limit:
            return None
    return chars


# \d, \s, \w and their negations, each as its largest reading (Unicode for the
# classes, ASCII for the negations), to test one character against a category
_CATEGORIES = {"CATEGORY_DIGIT": re.compile(r"\d"), "CATEGORY_SPACE": re.compile(r"\s"),
               "CATEGORY_WORD": re.compile(r"\w"), "CATEGORY_NOT_DIGIT": re.compile(r"\D", re.ASCII),
               "CATEGORY_NOT_SPACE": re.compile(r"\S", re.ASCII),
               "CATEGORY_NOT_WORD": re.compile(r"\W", re.ASCII)}


def _in_category(c, cat):
    rx = _CATEGORIES.get(getattr(cat, "name", ""))
    return True if rx is None else rx.match(c) is not None


def _may_match(ch, op, av):
    """Whether the one-character matcher (op, av) may match ``ch`` (either case; True
    when unsure)."""
    for c in {ch, ch.lower(), ch.upper()}:
        o = ord(c)
        if op is _c.LITERAL:
            hit = o == av
        elif op is _c.NOT_LITERAL:
            hit = o != av
        elif op is _c.IN:
            neg, hit = False, False
            for o2, a2 in av:
                if o2 is _c.NEGATE:
                    neg = True
                elif o2 is _c.LITERAL:
                    hit = hit or o == a2
                elif o2 is _c.RANGE:
                    hit = hit or a2[0] <= o <= a2[1]
                elif o2 is _c.CATEGORY:
                    hit = hit or _in_category(c, a2)
                else:
                    return True  # anything else: assume the worst
            hit = hit != neg
        elif op is _c.CATEGORY:
            hit = _in_category(c, av)
        else:  # ANY, ...
            return True
        if hit:
            return True
    return False


def _flatten(items):
    for op, av in items:
        yield op, av
        if op is _c.SUBPATTERN:
            yield from _flatten(av[-1])
        elif op is _c.BRANCH:
            for alt in av[1]:
                yield from _flatten(alt)
        elif op in _REPEATS:
            yield from _flatten(av[2])
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            yield from _flatten(av[1])


def shape_cost(pattern: str, flags: int = 0) -> tuple[int, int]:
    """``(c, d)`` such that ``re`` needs at most about ``c * n**(d+1)`` steps to search
    a cell of length ``n``; raises :class:`UnsafeRegex` for exponential shapes.

    >>> shape_cost("^[A-Z][a-z]+$"), shape_cost(".?.?.?$"), shape_cost("[0-9]")
    ((1, 1), (8, 0), (1, 0))
    """
    check_nesting(pattern)
    try:
        parsed = _sre_parse.parse(pattern, flags)
        return _cost(parsed)
    except re.error:
        raise
    except RecursionError:
        raise UnsafeRegex("nested too deeply") from None


def check_nesting(pattern: str, limit: int = MAX_NESTING) -> None:
    """Refuse a pattern whose groups nest deeper than ``limit`` before ``re`` parses it:
    its parser and compiler recurse once per level, and thousands of levels raise
    ``RecursionError`` from inside them."""
    depth = 0
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            # a ']' first in the class (after an optional '^') is a literal
            if pattern[i + 1:i + 2] == "^":
                i += 1
            if pattern[i + 1:i + 2] == "]":
                i += 1
        elif ch == "(":
            depth += 1
            if depth > limit:
                raise UnsafeRegex(f"groups nested more than {limit} deep")
        elif ch == ")":
            depth = max(depth - 1, 0)
        i += 1


def max_safe_length(c: int, d: int, budget: int = STEP_BUDGET) -> int:
    """The longest cell that ``c * (n+1)**(d+1)`` steps allow within ``budget``."""
    if c > budget:
        return -1
    return int((budget / c) ** (1.0 / (d + 1))) - 1


def re2_available() -> bool:
    """Whether the RE2 engine (``google-re2``) can be imported."""
    return _re2() is not None


_RE2 = []


def _re2():
    if not _RE2:
        try:
            import re2
            _RE2.append(re2)
        except ImportError:
            _RE2.append(None)
    return _RE2[0]


def _compile_re2(pattern: str, flags: int):
    re2 = _re2()
    options = re2.Options()
    options.log_errors = False
    if flags & re.IGNORECASE:
        options.case_sensitive = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        msg = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise UnsafeRegex(f"RE2 cannot compile it ({msg})") from None


def compile_re2(pattern: str, flags: int = 0):
    """``pattern`` compiled by RE2 (linear time; ``re``'s ``search`` / ``finditer``);
    :class:`UnsafeRegex` when RE2 cannot compile it. Only where :func:`re2_available`."""
    return _compile_re2(pattern, flags)


class _Guarded:
    """Python's ``re`` on cells short enough for the bound; RE2 (or an error) beyond."""

    __slots__ = ("rx", "limit", "pattern", "flags", "fallback", "where")

    def __init__(self, rx, limit, where):
        self.rx, self.limit, self.pattern, self.flags = rx, limit, rx.pattern, rx.flags
        self.fallback, self.where = None, where

    def search(self, s):
        if len(s) <= self.limit:
            return self.rx.search(s)
        if self.fallback is None:
            if _re2() is None:
                raise RegexTooSlow(
                    *self.where,
                    f"the regex {self.pattern!r} could backtrack for a very long time on a cell of "
                    f"{len(s)} characters (the limit for its shape is {self.limit}); install the "
                    f"linear-time engine (pip install 'spargel[re2]') or simplify the regex")
            self.fallback = _compile_re2(self.pattern, self.flags)
        return self.fallback.search(s)


class _Linear:
    """RE2 for a pattern whose shape ``re`` cannot run safely."""

    __slots__ = ("rx", "pattern", "flags")

    def __init__(self, pattern, flags):
        self.rx, self.pattern, self.flags = _compile_re2(pattern, flags), pattern, flags

    def search(self, s):
        return self.rx.search(s)


def compile_regex(pattern: str, flags: int = 0, where=("<template>", None)):
    """A compiled regex with ``search(cell)`` and ``pattern`` that cannot hang.

    ``where`` (source, line) names the pattern in the error raised on a cell too long
    for it (:class:`RegexTooSlow`).

    Raises ``re.error`` for bad syntax, and :class:`UnsafeRegex` when the pattern needs
    the linear-time engine and it is not installed (or cannot compile the pattern).
    """
    check_nesting(pattern)
    try:
        rx = re.compile(pattern, flags)
    except RecursionError:
        raise UnsafeRegex("nested too deeply") from None
    try:
        c, d = shape_cost(pattern, flags)
    except UnsafeRegex as exc:
        if _re2() is None:
            raise UnsafeRegex(f"its time can grow exponentially with the cell length ({exc}); "
                              f"install the linear-time engine (pip install 'spargel[re2]') or "
                              f"simplify the regex") from None
        return _Linear(pattern, flags)
    limit = max_safe_length(c, d)
    if limit < 0:
        if _re2() is None:
            raise UnsafeRegex(f"it has too many optional parts ({c} combinations per position); "
                              f"install the linear-time engine (pip install 'spargel[re2]') or "
                              f"simplify the regex")
        return _Linear(pattern, flags)
    if d == 0 and limit >= 10 ** 7:
        return rx  # linear in the cell: nothing to guard
    return _Guarded(rx, limit, where)
