"""The "In short" openings: the finding, its number, the action, then every verdict beside its own number
(issue 31, item 12), and the numbers the openings and verdict rows print where an expert found them wrong."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from contention_book.chapters import ghost_cleanup, last_page_insert, latch_fairness, lmax_queue, logcache_spinlock
from contention_book.chapters.shared.claims import head
from contention_book.chapters.shared.in_short import number, verdict_list
from contention_book.harness.provenance import engine_words

UNTESTED = ("not testable here", "not testable with this recording")


def _words(markdown: str) -> int:
    text = re.sub(r"```\{admonition\} In short\n:class: tip\n|```", "", markdown)
    return len(re.sub(r"[*`]", "", text).split())


def test_number_reads_the_median_and_its_interval():
    assert number("records/s 73.7× (15.9×–147.5×) the fair lock's") == "73.7× (15.9×–147.5×)"
    assert number("9% -> 6% of samples (0.68× (0.54×–0.76×))") == "0.68× (0.54×–0.76×)"
    assert number("1.07× (range 0.99×–1.22×, 3 runs) the ring") == "1.07× (range 0.99×–1.22×, 3 runs)"
    assert number("ratio 6.2× (6.2×–6.2×)") == "6.2×"  # an interval of one value is one value
    assert number("ratio 6.2× (6.2–6.2)") == "6.2×"
    assert number("PostgreSQL has no such option") == ""


def test_verdict_list_puts_each_verdict_beside_its_number_and_groups_the_untested():
    rows = pd.DataFrame([
        {"claim": "a", "measured": "2.0× (1.5×–2.5×) faster", "verdict": "direction reproduced"},
        {"claim": "b", "measured": "0.9× (0.8×–1.2×)", "verdict": "inconclusive: the interval straddles 1"},
        {"claim": "c", "measured": "needs SQL Server", "verdict": "not testable here: needs SQL Server"},
        {"claim": "e", "measured": "1.21× (1.1×–1.3×) on 2 CPUs", "verdict": "not testable here: needs 4+ CPUs"},
    ])
    text = verdict_list(rows, {"a": "A", "b": "B", "c": "C", "e": "E", "d": "D"}, {"b": "0.9×"})
    assert "A, 2.0× (1.5×–2.5×): *direction reproduced*" in text
    assert "B, 0.9×: *inconclusive*" in text
    assert "*Not testable here*: C, E." in text and "*Not testable with this recording*: D" in text
    assert "1.21" not in text  # a ratio measured without the claim's condition is not printed as a result


def _in_shorts():
    out = {}
    sh = latch_fairness.load_shown("")
    out["latch-fairness"] = (latch_fairness.key_numbers(sh)["in_short"], latch_fairness.verdicts(sh))
    sh = logcache_spinlock.load_shown("")
    out["logcache-spinlock"] = (logcache_spinlock.key_numbers(sh)["lc_in_short"], logcache_spinlock.verdicts(sh))
    sh = ghost_cleanup.load_shown("")
    rows = ghost_cleanup.verdicts(sh)
    out["ghost-cleanup"] = (ghost_cleanup.finding.in_short(sh, rows, ghost_cleanup.key_numbers(sh)), rows)
    sh = last_page_insert.load_shown("")
    out["last-page-insert"] = (last_page_insert.key_numbers(sh)["lpi_in_short"], last_page_insert.verdicts(sh))
    sh = lmax_queue.load_shown("")
    rows = lmax_queue.verdicts(sh)
    out["lmax-queue"] = (lmax_queue.finding.verdict_words(rows, sh)["lmax_in_short"], rows)
    return out


@pytest.fixture(scope="module")
def in_shorts():
    return _in_shorts()


@pytest.mark.parametrize("chapter", ["latch-fairness", "logcache-spinlock", "ghost-cleanup", "last-page-insert"])
def test_every_opening_names_every_verdict_and_stays_short(in_shorts, chapter):
    text, rows = in_shorts[chapter]
    assert "**For a DBA:**" in text and "**Verdicts" in text
    listed = text.split("**Verdicts", 1)[1]
    for word in rows["verdict"].map(head):  # the untested are listed at the end, their word capitalised
        assert f"*{word}*" in listed or f"*{word[:1].upper() + word[1:]}*" in listed, (chapter, word)
    judged = rows[~rows["verdict"].map(head).isin(UNTESTED)]
    assert listed.count(": *") >= len(judged), chapter  # one "label, number: *verdict*" per judged claim
    assert _words(text) <= 185, (chapter, _words(text))  # the browser test allows 190 rendered words


@pytest.mark.parametrize("chapter", ["lmax-queue"])
def test_reviewed_openings_say_what_was_tested_what_was_found_then_the_action(in_shorts, chapter):
    """Review round 3, item 25: one sentence of what was tested, the finding, then the action, and the opening stays
    short; issue 31, point 12: then every judged verdict beside its own number."""
    text, rows = in_shorts[chapter]
    assert text.startswith("**Tested:** ") and text.index("**Found:**") < text.index("**For a DBA:**") \
        < text.index("**Verdicts:**")
    judged = rows[~rows["verdict"].map(head).isin(UNTESTED)]
    assert text.split("**Verdicts:**")[1].count(": *") >= len(judged)
    tested = text.split("**Found:**")[0].strip()
    assert tested.endswith(".") and tested[:-1].count(". ") == 0  # one sentence
    assert _words(text) <= 185, (chapter, _words(text))


def test_the_queue_chapter_opening_quotes_the_claims_tables_own_numbers(in_shorts):
    text, rows = in_shorts["lmax-queue"]
    for key in ("ring_1p", "ceiling", "delayed"):
        row = rows[rows["claim"] == lmax_queue.claims.C[key]].iloc[0]
        assert number(row["measured"]) in text, key
    assert "2.3×" not in text and "full ring" not in text


def test_the_last_page_opening_leads_with_the_finding_then_the_action_then_each_verdict(in_shorts):
    """Review of chapter 4's main page: the opening leads with the finding and its one number (the leaf's share of
    samples, hash partitioning's median loss), then the action, then every verdict beside its own number."""
    text, rows = in_shorts["last-page-insert"]
    n = last_page_insert.key_numbers(last_page_insert.load_shown(""))
    assert text.startswith("**Found:** ") and "**Tested:**" not in text
    assert text.index("**Found:**") < text.index("**For a DBA:**") < text.index("**Verdicts:**")
    found = text.split("**For a DBA:**")[0]
    assert f"an estimated {n['q_seq_over_random']} of samples" in found
    loss = 1 - float(n["q_hash_vs_seq"].rstrip("×"))
    assert f"a median {loss:.0%} slower" in found and "a short queue" in found
    listed = text.split("**Verdicts:**", 1)[1]
    assert f"a queue at the last leaf, {n['q_seq_over_random_text']}: *" in listed   # the leaf's, not 1 session's
    assert f"more pages read without pruning, {n['q_noprune_ratio']}: *" in listed


def test_the_last_page_chapter_opening_quotes_both_fixes_with_their_intervals(in_shorts):
    text, rows = in_shorts["last-page-insert"]
    row = rows[rows["claim"] == last_page_insert.claims.C["hash_rate"]].iloc[0]
    assert number(row["measured"]) in text
    assert "cost more than they save" not in text and "LWLock:BufferContent" in text


def test_no_ratio_to_zero_in_the_ghost_pile_up_row():
    sh = ghost_cleanup.load_shown("")
    row = ghost_cleanup.verdicts(sh).set_index("claim").loc[ghost_cleanup.claims.CLAIMS["pile_up"]]
    assert "0 after cleanup" in row["measured"] and "×" not in row["measured"]


def test_the_xdesmgr_analogue_is_computed_from_the_recording():
    sh = logcache_spinlock.load_shown("")
    pg = sh.measured.get("postgres")
    w = pd.read_csv(pg.recording.path / "samples" / "wait_shares.csv")
    cb = w[(w["backend_type"] == "client backend") & (w["variant"] == "default")]
    top = cb[cb["sessions"] == cb["sessions"].max()]
    per = top.groupby(["repetition", "wait"])["samples"].sum().unstack(fill_value=0)
    xidgen = (per["LWLock:XidGen"] / per.sum(axis=1)).median()
    n, shares = logcache_spinlock.tables.xid_wait_shares(pg)
    assert n == int(cb["sessions"].max()) and shares["LWLock:XidGen"].median == pytest.approx(xidgen)
    row = logcache_spinlock.verdicts(sh).set_index("claim").loc[logcache_spinlock.claims.CLAIM5]
    assert "LWLock:XidGen" in row["measured"] and head(row["verdict"]) == "not testable here"


def test_the_one_session_procarray_share_is_explained_from_the_recording():
    text = last_page_insert.key_numbers(last_page_insert.load_shown(""))["m_procarray_text"]
    assert "LWLock:ProcArray" in text and "ProcArrayLock" in text and "sampling off" in text


def test_published_in_process_recordings_name_their_language():
    assert engine_words({"kind": "published", "engine": {"name": "native", "version": "Java (the paper's JVM)"}}) \
        == "Java (the paper's JVM)"
    assert engine_words({"kind": "measured", "engine": {"name": "native", "version": "cc 12.2"}}) == "C programs"


def test_the_last_page_opening_calls_the_leafs_share_an_estimate_and_the_fixes_not_measurable(in_shorts):
    """Review: PostgreSQL names no buffer a waiter waits for, so the leaf's share is an inference (the buffer-lock
    share less the control's), and a ratio whose interval reaches 1 is not a measured payoff or loss."""
    text, rows = in_shorts["last-page-insert"]
    n = last_page_insert.key_numbers(last_page_insert.load_shown(""))
    assert f"an estimated {n['q_seq_over_random']} of samples at {n['m_nd_text']} ({n['q_seq_hot']} on " \
           f"`LWLock:BufferContent` less the non-sequential key's {n['q_random_hot']})" in text
    assert "in about" not in text and "paid off measurably" in text
    assert "an estimated" in n["m_queue_text"]
    row = rows[rows["claim"] == last_page_insert.claims.C["queue"]].iloc[0]
    assert f"an estimated {n['q_seq_over_random_text']} on the leaf" in row["measured"]


def test_the_last_page_rows_state_what_their_rule_would_give_and_why_it_is_not_applied(in_shorts):
    _, rows = in_shorts["last-page-insert"]
    by = rows.set_index("claim")
    page = by.loc[last_page_insert.claims.C["last_page"]]
    assert "not applied because buffer pins are not waits" in page["verdict"]
    assert ("rule met" in page["verdict"]) or ("rule not met" in page["verdict"]) or ("rule undecided" in page["verdict"])
    assert "within 8 leaves of the right edge" in page["rule"] and "within 8 leaves" in page["measured"]
    rate = by.loc[last_page_insert.claims.C["hash_rate"]]
    if head(rate["verdict"]) == "not testable here":  # the power check overrode the 1.05 threshold: the row says so
        m = re.search(r"at most (\d+\.\d+)× was possible", rate["verdict"])
        assert m and float(m.group(1)) < last_page_insert.claims.SMALLEST_GAIN
        assert "overrides the 1.05 threshold" in rate["verdict"]


def test_the_hash_rate_bound_uses_the_leafs_share_as_the_page_estimates_it():
    """Review of chapter 4: the bound on what hash partitioning could gain, 1/(1 − share), takes the leaf's share
    (the buffer-lock share less the non-sequential key's, which shares the heap's end and the sequence), the same
    estimate the queue row and the opening quote, not the whole buffer-lock share."""
    from contention_book.chapters.last_page_insert import tables

    sh = last_page_insert.load_shown("")
    q = tables.quoted(sh.measured)
    leaf, whole = q["seq_over_random"], q["seq_hot"]
    assert 0 < leaf.median < whole.median
    rate = last_page_insert.verdicts(sh).set_index("claim").loc[last_page_insert.claims.C["hash_rate"]]
    m = re.search(r"at most (\d+\.\d+)× was possible", rate["verdict"])
    assert m and m.group(1) == f"{1 / (1 - leaf.median):.2f}", rate["verdict"]
    leaf_words = f"the last leaf in an estimated {tables.q_text(q, 'seq_over_random', False)} of samples"
    assert leaf_words in rate["verdict"] and leaf_words in rate["measured"]
    assert f"latch in {tables.q_text(q, 'seq_hot', False)}" not in rate["verdict"] + rate["measured"]
    assert leaf_words in last_page_insert.key_numbers(sh)["m_decide_text"]


def test_the_hash_designs_share_is_printed_at_the_sequential_keys_precision(in_shorts):
    _, rows = in_shorts["last-page-insert"]
    row = rows[rows["claim"] == last_page_insert.claims.C["hash_waits"]].iloc[0]
    assert re.search(r"\d+\.\d% -> \d+\.\d% of samples", row["measured"]), row["measured"]


def test_the_latch_chapter_opening_names_the_tail_claim_then_what_was_measured(in_shorts):
    """Review of chapter 1: the tail's label names the article's claim (shorter), and its number the measured
    direction, from the claims table's own median."""
    text, rows = in_shorts["latch-fairness"]
    row = rows[rows["claim"].str.startswith("The unfair latch's wait tail")].iloc[0]
    median = number(row["measured"]).split(" (")[0]
    ratio = float(median.rstrip("×")) if "/" not in median else 1 / float(median.split("/")[1])
    assert "shorter wait tail (the article's claim), measured " in text
    assert (f"measured {median} longer" if ratio > 1 else "measured shorter") in text
    assert "longer 99th-percentile wait" not in text
