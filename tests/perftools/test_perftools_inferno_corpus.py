"""Our collapse against inferno-collapse-perf on public perf captures.

The captures are the test data of jonhoo/inferno (tests/data/collapse-perf),
brendangregg/FlameGraph (test/perf-*.txt, example-perf-stacks.txt.gz),
jlfwong/speedscope (sample/profiles/linux-perf), firefox-devtools/profiler
(src/test/fixtures/upgrades: *.perf.gz, simple-perf.txt.gz) and
Netflix/flamescope (examples/perf.test01), read from git mirrors brought by the project's fetch tool into
/work/.mirror (or $PERFTOOLS_CORPUS_MIRRORS); none of them is in this
repository.  The test skips when the mirrors or inferno-collapse-perf are
absent (`cargo install inferno` installs it).  Only naming conventions are
normalised (:mod:`contention_book.perftools.reference`); every capture
must agree stack for stack and weight for weight, or be listed in
DISAGREEMENTS with the reason and who is right.
"""

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from contention_book.perftools import FormatError
from contention_book.perftools.importers import perf_script
from contention_book.perftools.reference import as_reference_names, compare, read_folded_text, rust_legacy_name, \
    tidy_function

MIRRORS = Path(os.environ.get("PERFTOOLS_CORPUS_MIRRORS", "/work/.mirror"))
SOURCES = {  # mirror git dir -> (folder in the repository, file name filter)
    "jonhoo+inferno/repo": ("tests/data/collapse-perf", lambda n: n.endswith(".txt")),
    "brendangregg+FlameGraph/repo": ("", lambda n: n.startswith("test/perf-") or n == "example-perf-stacks.txt.gz"),
    "jlfwong+speedscope/repo": ("sample/profiles/linux-perf", lambda n: n.endswith(".txt")),
    "firefox-devtools+profiler/repo": ("src/test/fixtures/upgrades",
                                       lambda n: n.endswith(".perf.gz") or n.endswith("/simple-perf.txt.gz")),
    "Netflix+flamescope/repo": ("examples", lambda n: n == "examples/perf.test01"),
}

# file -> why our collapse differs from inferno's, and who is right
DISAGREEMENTS = {
    "collapse-perf/empty-line.txt":
        "a sample header followed by a blank line has no frames: we keep its weight as one 'n/a' frame (perf report "
        "counts the sample too), inferno drops it; the orphan frame after the blank line is skipped by both. "
        "Ours keeps the total equal to perf report's.",
    "collapse-perf/weird-stack-line.txt":
        "the only frame line of a sample is unreadable; both skip the line, we keep the sample as 'n/a' (and report "
        "the skipped line), inferno drops the sample. Ours keeps perf report's total.",
    "collapse-perf/single-line-stacks.txt":
        "the two samples are of events 'cycles:u' and 'cycles'; inferno cuts the event name at its first ':' and so "
        "sums both, we keep the first event only. 'cycles:u' (user-only) and 'cycles' are different perf events "
        "(perf report lists them apart): ours is right.",
    "collapse-perf/java-inline.txt":
        "perf-map-agent writes inlined Java frames as one symbol 'La;::f->Lb;::g'; inferno splits it into frames "
        "marked _[i], we keep one frame. Inferno's is the more informative reading; ours does not split because the "
        "same '->' appears in C++ names (operator->), which inferno then breaks apart.",
    "collapse-perf/no-events.txt":
        "an empty file: inferno prints nothing and succeeds, we stop with 'expected at least one perf sample' "
        "(exit 2). Same content; we prefer to say the input is empty.",
    "test/perf-vertx-stacks-01.txt":
        "two frames '7f1e2215d058  (/lib/.../libc-2.15.so)' have no symbol: inferno (like stackcollapse-perf.pl) "
        "names the frame ' ' (a blank), we name it '[libc-2.15.so]' as it names every unknown symbol of a dso. "
        "Ours is right: a blank frame hides where the time went.",
    "upgrades/test.perf.gz":
        "two differences. The file mixes events 'cycles:uppp' (72 samples) and 'cycles:ppp' (1): inferno cuts the "
        "name at its first ':' and sums both, we keep the first (as for single-line-stacks.txt). And the frame "
        "'(anonymous namespace)::CreateThread (libxul.so)': inferno drops every symbol that starts with '(' "
        "(stackcollapse-perf.pl's rule for old perf's '(process name)' lines), we keep it. Ours is right: it is "
        "a C++ function, and inferno's own tidy_generic keeps '(anonymous namespace)' names.",
    "upgrades/simple-perf.txt.gz":
        "Android simpleperf's report_sample.py text: fields and frame addresses separated by tabs. inferno "
        "reads no sample header ('Weird event line' on each; the same text with tabs as spaces it reads) and "
        "then panics ('assertion failed: self.event_filter.is_some()', exit 101); we read all 163 samples "
        "(perf_script documents the shape). Ours is right.",
    "examples/perf.test01":
        "perf-map-agent's inlined Java frames 'La;::f->Lb;::g', as for java-inline.txt: inferno splits them, "
        "we keep one frame. (One frame line cut short, '... start_thread (/lib/x86_64-linux-gnu', is skipped "
        "by both.)",
}


def _corpus():
    out = []
    for repo, (folder, keep) in SOURCES.items():
        git_dir = MIRRORS / repo
        if not git_dir.is_dir():
            continue
        names = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", "HEAD", folder or "."],
                               capture_output=True, text=True, check=True).stdout.split()
        out += [(git_dir, n) for n in names if keep(n) and "/results/" not in n]
    return out


CORPUS = _corpus()
INFERNO = shutil.which("inferno-collapse-perf")
needs_corpus = [
    pytest.mark.skipif(not CORPUS, reason=f"no fetched capture mirrors under {MIRRORS}"),
    pytest.mark.skipif(INFERNO is None, reason="inferno-collapse-perf is not installed (cargo install inferno)"),
]


def _key(name: str) -> str:
    return "/".join(name.split("/")[-2:])


def _collapse_both(git_dir, name, tmp_path):
    data = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{name}"], capture_output=True,
                          check=True).stdout
    path = tmp_path / Path(name).name
    path.write_bytes(data)
    plain = gzip.decompress(data) if name.endswith(".gz") else data
    ref = subprocess.run([INFERNO], input=plain, capture_output=True, timeout=120)
    theirs = read_folded_text(ref.stdout.decode("utf-8", "replace")) if ref.returncode == 0 else None
    try:
        ours = as_reference_names(perf_script.load(path))
    except FormatError:
        ours = None
    return ours, theirs


@needs_corpus[0]
@needs_corpus[1]
def test_agreement_with_inferno(tmp_path):
    agree, disagree = [], {}
    for git_dir, name in CORPUS:
        ours, theirs = _collapse_both(git_dir, name, tmp_path)
        diffs = (["we reject the file"] if ours is None else ["inferno fails"] if theirs is None
                 else compare(ours, theirs))
        (disagree.__setitem__(_key(name), diffs) if diffs else agree.append(_key(name)))
    print(f"\nagree with inferno-collapse-perf on {len(agree)} of {len(CORPUS)} captures")
    unexplained = {k: v[:3] for k, v in disagree.items() if k not in DISAGREEMENTS}
    assert not unexplained, unexplained
    stale = [k for k in DISAGREEMENTS if k in agree]
    assert not stale, f"these now agree; drop them from DISAGREEMENTS: {stale}"
    assert len(agree) >= len(CORPUS) - len(DISAGREEMENTS)


def test_naming_rules_of_the_reference():
    assert tidy_function("Lsun/nio/ch/FileDispatcherImpl;.write0(Ljava/io/FileDescriptor;JI)I", java=True) == \
        "sun/nio/ch/FileDispatcherImpl:.write0"
    assert tidy_function("net/http.(*Client).Do", java=False) == "net/http.(*Client).Do"
    assert tidy_function("(anonymous namespace)::run(int)", java=False) == "(anonymous namespace)::run"
    assert tidy_function("std::function<void (int)>::operator()(int) const", java=False) == \
        "std::function<void (int)>::operator"
    assert rust_legacy_name("app::Vec$LT$T$GT$::push::_$u7b$$u7b$closure$u7d$$u7d$::h0123456789abcdef") == \
        "app::Vec<T>::push::_{{closure}}"
    assert rust_legacy_name("_ZN3app4main17h0123456789abcdefE") == "_ZN3app4main17h0123456789abcdefE"
