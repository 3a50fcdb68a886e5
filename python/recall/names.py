"""What a note's name and title say about it: the version in a file name and the words of a
title, read the same way by `recall check` and by a search that looks for an undeclared update.

Owns: `version` (a file stem's normalised base and version, dates and numbered series told
apart from versions), `title_tokens` (a title's words without stop words or version marks) and
`fold_title`, and the function words that carry no topic. Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["FUNCTION_WORDS", "fold_title", "title_tokens", "version"]

# `x-v2`, `x_v2`, `x.v3`, `x v2`, `xv2`, `x-version-2`, `x-2`, `x-1.2`.
_VERSIONED = re.compile(
    r"(?P<base>.*?[^\W_])(?:[-_. ]+(?P<v>v|ver|version)?[-_ ]?|(?P<vv>v))"
    r"(?P<number>[0-9]+(?:\.[0-9]+){0,2})",
    re.IGNORECASE,
)
# Numbered series, not versions: `adr-0005`, `pep-8`, `rfc-2119`.
_SERIES = frozenset({"adr", "pep", "rfc", "issue", "ticket", "memo", "note", "notes"})
_DATE_TAIL = re.compile(r"(?:^|[^0-9])[0-9]{4}(?:[-_.][0-9]{1,2})?$")


def version(stem: str) -> tuple[str, tuple[int, ...] | None]:
    """(normalised base, version) of a file stem; version None when the stem carries none.

    A bare number is a version only when it is short and not zero-padded: `x-2` is, while
    `incident-2026`, `standup-2024-01-05` and `adr-0005` are dates and sequence numbers."""
    match = _VERSIONED.fullmatch(stem)
    if match is not None:
        base, number = match.group("base"), match.group("number")
        marked = bool(match.group("v") or match.group("vv"))
        parts = tuple(int(p) for p in number.split("."))
        padded = len(number) > 1 and number[0] == "0" and "." not in number
        looks_like_date = bool(_DATE_TAIL.search(base)) or len(number.split(".")[0]) >= 4
        norm = _norm_base(base)
        if (
            any(c.isalpha() for c in base)
            and norm not in _SERIES
            and (marked or not (padded or looks_like_date))
        ):
            return norm, parts
    return _norm_base(stem), None


def _norm_base(base: str) -> str:
    return re.sub(r"[-_. ]+", "-", base.casefold()).strip("-")


_TITLE_STOP = frozenset({"a", "an", "the", "of", "for", "to", "and", "in", "on", "with"})
_TITLE_VERSION = re.compile(r"v[0-9]+|version|rev|revision|revised|[0-9]{1,3}")


def title_tokens(title: str) -> frozenset[str]:
    """A title's words, casefolded, without stop words or version marks."""
    words = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", title).casefold())
    return frozenset(w for w in words if w not in _TITLE_STOP and not _TITLE_VERSION.fullmatch(w))


def fold_title(title: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", title).casefold().split())


#: Words a list of shared terms leaves out: they carry no topic.
_FUNCTION_WORDS = """
    a about after all also an and any are as at be been but by can could did do does for from
    had has have how if in into is it its may more must no not of on or our should so such than
    that the their them then there these they this those through to too up was we were what when
    where which while who why will with would you your
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
