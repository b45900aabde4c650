"""What a person means by a short query, and why a hit was found, in words.

Reciprocal rank fusion (:mod:`graphlake.search.fusion`) weighs the full-text and the meaning
rankings alike, so on a real terminal recording a two-word query put first a frame holding
only one of the words (the vectors liked it). For short queries people mean the words: a hit
showing every word of the query ranks above the others, and fusion orders hits within each
of the two tiers. Function words ("the", "of") are left out: a paraphrase such as "the code
compiled cleanly" must not prefer every screen that shows "the". Words are matched the way
OCR text needs: letter trigrams with case and spaces dropped (OCR often loses spaces), most
of a word's trigrams present; a word under three letters must appear as it is.
"""

from __future__ import annotations

import re

#: Queries of at most this many words are ranked by the words they show first.
SHORT_QUERY_WORDS = 5
#: Share of a word's letter trigrams a text must hold for the word to count as present.
WORD_COVERAGE = 0.75

#: Words that say nothing about a screen: left out of the words a hit must show.
STOPWORDS = frozenset(
    "a an the of to in on at by for from with and or but not no is are was were be been it its "
    "this that these those what which who whom how why when where did do does done has have had "
    "after before into about over under than then so as if i you he she we they me my our your "
    "their".split()
)

#: The rankings, as a person would say what each one noticed.
RANKERS = {
    "fts": "the words",
    "text_vector": "the meaning of the text",
    "image_vector": "the picture (OpenCLIP)",
    "phash": "the look of the picture",
}


def _trigrams(s: str) -> set[str]:
    return {s[i : i + 3] for i in range(len(s) - 2)}


def query_words(query: str) -> list[str]:
    """The distinct words of ``query`` that say something (function words left out unless
    the query has nothing else), lower case, in order."""
    seen: dict[str, None] = {}
    for w in re.findall(r"\w+", query.lower()):
        seen.setdefault(w, None)
    content = [w for w in seen if w not in STOPWORDS]
    return content or list(seen)


def words_present(words: list[str], text: str | None) -> int:
    """How many of ``words`` the text shows."""
    flat = "".join((text or "").lower().split())
    grams = _trigrams(flat)
    found = 0
    for w in words:
        wg = _trigrams(w)
        if (w in flat) if not wg else len(wg & grams) >= WORD_COVERAGE * len(wg):
            found += 1
    return found


def words_first(query: str, fused: list[tuple[str, float, list[str]]], text_of) -> list:
    """``fused`` (id, score, rankers) with, for a short query, the hits showing every one of
    its words first; fusion's order within each tier. ``text_of(id)`` gives a hit's text."""
    words = query_words(query)
    if not words or len(words) > SHORT_QUERY_WORDS:
        return fused
    every = {item[0]: words_present(words, text_of(item[0])) == len(words) for item in fused}
    return sorted(fused, key=lambda item: not every[item[0]])  # stable: fusion order in a tier


def why(rankers: list[str], words_shown: int = 0, words: int = 0) -> str:
    """Why a hit was found, for people: "found by the words (2 of 2 shown) and the meaning
    of the text"."""
    parts = [RANKERS.get(r, r) for r in rankers]
    if "fts" in rankers and words:
        parts[rankers.index("fts")] += f" ({words_shown} of {words} shown)"
    if not parts:
        return ""
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"found by {joined}"
