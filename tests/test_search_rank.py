"""Short queries mean their words: a hit showing every word ranks above one showing some,
whatever fusion preferred, and fusion's order holds within each tier."""

from __future__ import annotations

from graphlake.search.rank import query_words, why, words_first, words_present


def test_a_hit_showing_every_word_ranks_above_one_showing_some():
    texts = {
        "one_word": "git status\nOn branch main",  # what fusion liked best
        "both_far": "Terminal\n$ git rebase --interactive\nrebase done",
        "neither": "Browser - Weather",
        "both_ocr": "$gitrebase-i HEAD~3",  # OCR lost the spaces
    }
    fused = [(k, 1.0 / (i + 1), ["text_vector"]) for i, k in enumerate(texts)]
    ranked = [item[0] for item in words_first("git rebase", fused, texts.get)]
    assert ranked == ["both_far", "both_ocr", "one_word", "neither"]
    # function words do not count: a paraphrase is not pulled towards every "the" on screen
    screens = {"s1": "after the price rise", "s2": "Compilation finished without errors"}
    fused = [("s2", 0.5, ["text_vector"]), ("s1", 0.4, ["text_vector"])]
    assert words_first("the code compiled cleanly", fused, screens.get) == fused


def test_long_queries_keep_fusion_order_and_words_are_matched_as_ocr_reads_them():
    fused = [("a", 0.3, ["fts"]), ("b", 0.2, ["fts"])]
    long_query = "why did all of the customers leave right after the big price rise in march"
    assert words_first(long_query, fused, {"a": "", "b": long_query}.get) == fused
    assert query_words("Churn, churn EXPLANATION") == ["churn", "explanation"]
    assert query_words("the summary of sources") == ["summary", "sources"]
    assert query_words("of the") == ["of", "the"]  # nothing else to go by
    assert words_present(["churn", "explanation"], "Churnexplanati0n: customers") == 2
    assert words_present(["of", "churn"], "proof of churn") == 2
    assert words_present(["of"], "churn") == 0


def test_why_says_what_found_a_hit():
    assert why(["fts", "text_vector"], 2, 2) == (
        "found by the words (2 of 2 shown) and the meaning of the text"
    )
    assert why(["phash"]) == "found by the look of the picture"
    assert why(["fts", "text_vector", "image_vector"], 1, 3) == (
        "found by the words (1 of 3 shown), the meaning of the text and the picture (OpenCLIP)"
    )
