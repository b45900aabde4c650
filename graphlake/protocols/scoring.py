"""Scoring predictions with the papers' metrics (Kolab A.9, Almanac 4.2, HAS-Bench 4.3).

* Labels (Kolab 1a-1d, outcome forecasts, Almanac action types and mental-model categories):
  macro precision, recall and F1 over the protocol's classes, per-class F1 (a class never
  predicted scores 0, as sklearn's ``zero_division=0``), and accuracy.
* Ratings (Kolab 2a, 2b): MAE, exact accuracy, within-1 accuracy, Spearman's rho (ties
  averaged) and MAE per true band (1-2, 3, 4, 5).
* Almanac drawing: each predicted cell scores 1 on a gold cell, 2/3 at Chebyshev distance 1,
  1/3 at distance 2, else 0; averaged over the predicted cells of all draw predictions.

A prediction's label is read as a model writes it (:func:`parse_label`: the label alone, any
case, in backticks, or named once in a sentence; :func:`parse_rating` likewise for 1-5), the
same parsing graphlake's inspect_ai scorer applies. Predictions are matched to instances by id.
Ids the protocol does not have are listed in ``unknown``, instances without a prediction in
``missing``, and predictions whose label cannot be read in ``invalid``; none of them enter the
metrics, and none is dropped silently.
"""

from __future__ import annotations

import math
import re
from collections import Counter

#: How the papers' models write the adoption labels, normalised to the class names.
_ALIASES = {"REJECT/BYPASS": "REJECT", "BYPASS": "REJECT", "REJECT / BYPASS": "REJECT"}
RATING_BANDS = (("1-2", (1, 2)), ("3", (3,)), ("4", (4,)), ("5", (5,)))


def normalise_label(label, classes: tuple[str, ...]) -> str | None:
    """The class a model's output names, case- and backtick-insensitive, or None."""
    if label is None:
        return None
    text = str(label).strip().strip("`'\". ").upper()
    text = _ALIASES.get(text, text)
    upper = {c.upper(): c for c in classes}
    return upper.get(text) if classes else str(label).strip()


def parse_label(answer, classes: tuple[str, ...]) -> str | None:
    """The class a model's free-text answer gives: the whole answer as a label
    (:func:`normalise_label`), else the one class it names as a word (``The answer is
    `ADOPT`.``). An answer naming two classes, or none, has no label (scored as invalid,
    never guessed)."""
    label = normalise_label(answer, classes)
    if label is not None and (label in classes or not classes):
        return label
    if answer is None or not classes:
        return None
    text = str(answer).upper()
    upper = {c.upper(): c for c in classes}
    # every spelling of a class: its name, and the papers' aliases of it
    names = {**upper, **{a: upper[c] for a, c in _ALIASES.items() if c in upper}}
    found = {
        cls
        for name, cls in names.items()
        if re.search(rf"(?<![A-Z]){re.escape(name)}(?![A-Z])", text)
    }
    return found.pop() if len(found) == 1 else None


def parse_rating(answer) -> int | None:
    """A 1-5 rating from a model's answer: the answer itself, else its one digit 1-5."""
    value = normalise_rating(answer)
    if value is not None or answer is None:
        return value
    digits = set(re.findall(r"(?<![\d.])([1-5])(?!\.?\d)", str(answer)))
    return int(digits.pop()) if len(digits) == 1 else None


def normalise_rating(label) -> int | None:
    try:
        value = float(str(label).strip().strip("`'\"."))
    except (TypeError, ValueError):
        return None
    return int(value) if value.is_integer() and 1 <= value <= 5 else None


def classification(gold: list[str], pred: list[str], classes: tuple[str, ...]) -> dict:
    """Macro P/R/F1 and per-class F1 over ``classes`` (all of them, predicted or not)."""
    n = len(gold)
    per_p, per_r, per_f = {}, {}, {}
    for c in classes:
        tp = sum(1 for g, p in zip(gold, pred, strict=True) if g == c and p == c)
        n_pred = sum(1 for p in pred if p == c)
        n_gold = sum(1 for g in gold if g == c)
        p_c = tp / n_pred if n_pred else 0.0
        r_c = tp / n_gold if n_gold else 0.0
        per_p[c], per_r[c] = p_c, r_c
        per_f[c] = 2 * p_c * r_c / (p_c + r_c) if p_c + r_c else 0.0
    k = len(classes) or 1
    return {
        "n": n,
        "accuracy": sum(g == p for g, p in zip(gold, pred, strict=True)) / n if n else None,
        "macro_precision": sum(per_p.values()) / k if n else None,
        "macro_recall": sum(per_r.values()) / k if n else None,
        "macro_f1": sum(per_f.values()) / k if n else None,
        "per_class_f1": per_f if n else {},
        "per_class_recall": per_r if n else {},
    }


def ratings(gold: list[int], pred: list[int]) -> dict:
    n = len(gold)
    if not n:
        return {
            "n": 0,
            "mae": None,
            "exact": None,
            "within_1": None,
            "spearman": None,
            "mae_by_band": {},
        }
    err = [abs(g - p) for g, p in zip(gold, pred, strict=True)]
    rho = None
    if len(set(gold)) > 1 and len(set(pred)) > 1:
        from scipy.stats import spearmanr  # about 1.5 s of imports, paid only here

        rho = float(spearmanr(gold, pred).statistic)
        rho = None if math.isnan(rho) else rho
    bands = {}
    for name, members in RATING_BANDS:
        errs = [e for g, e in zip(gold, err, strict=True) if g in members]
        bands[name] = sum(errs) / len(errs) if errs else None
    return {
        "n": n,
        "mae": sum(err) / n,
        "exact": sum(e == 0 for e in err) / n,
        "within_1": sum(e <= 1 for e in err) / n,
        "spearman": rho,
        "mae_by_band": bands,
    }


def chebyshev_score(pred_cells, gold_cells) -> tuple[float, int]:
    """(sum of cell scores, number of predicted cells) for one drawing prediction."""
    gold = [tuple(c) for c in gold_cells or []]
    total, n = 0.0, 0
    for cell in pred_cells or []:
        r, c = cell
        n += 1
        if not gold:
            continue
        d = min(max(abs(r - gr), abs(c - gc)) for gr, gc in gold)
        total += {0: 1.0, 1: 2 / 3, 2: 1 / 3}.get(d, 0.0)
    return total, n


def majority(labels: list) -> object:
    """The most frequent label (ties: the smallest, so the baseline is deterministic)."""
    counts = Counter(labels)
    best = max(counts.values())
    return min(label for label, c in counts.items() if c == best)
