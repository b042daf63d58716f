"""Each importer recognises its own format from a head of lines, and not the others' fixtures."""
import gzip
from pathlib import Path

import pytest

from contention_book.perftools.importers import folded, perf_script, wpa_csv, wpa_tree, xperf_dumper

FIX = Path(__file__).parent / "fixtures"
OWN = {
    "xperf_dumper": ["xperf/dumper_sampled.txt"],
    "wpa_tree": ["wpa/tree_en_us.csv", "wpa/tree_de_copy.tsv"],
    "wpa_csv": ["wpa/logcache_before.csv", "wpa/logcache_after.csv", "wpa/per_sample_de_locale.csv"],
    "perf_script": ["perf/postgres_update.perf-script.txt", "perf/python_busy_comm_with_space.perf-script.txt",
                    "perf/python_busy_no_callchain.perf-script.txt"],
    "folded": ["folded/small.folded", "folded/postgres_update_pidtid.folded.gz"],
}
IMPORTERS = {"xperf_dumper": xperf_dumper, "wpa_tree": wpa_tree, "wpa_csv": wpa_csv, "perf_script": perf_script,
             "folded": folded}


def head(rel: str) -> list[str]:
    path = FIX / rel
    raw = gzip.open(path, "rt").read(65536) if rel.endswith(".gz") else path.read_text(errors="replace")[:65536]
    return [ln for ln in raw.split("\n")[:-1] if ln.strip()]


@pytest.mark.parametrize("fmt", list(OWN))
def test_own_fixtures_are_recognised(fmt):
    for rel in OWN[fmt]:
        assert IMPORTERS[fmt].looks_like(head(rel)), rel


@pytest.mark.parametrize("fmt", list(OWN))
def test_other_formats_are_not_taken(fmt):
    others = [rel for f, rels in OWN.items() if f != fmt for rel in rels]
    # a WPA tree is also a CSV with a Stack column: the plain CSV importer accepts it, which is why the
    # sniffer asks the tree importer first
    if fmt == "wpa_csv":
        others = [r for r in others if not r.startswith("wpa/tree")]
    for rel in others:
        assert not IMPORTERS[fmt].looks_like(head(rel)), f"{fmt} took {rel}"


def test_empty_heads_are_nobodys():
    assert not any(imp.looks_like([]) for imp in IMPORTERS.values())
