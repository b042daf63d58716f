"""Re-make the book's measured reference recordings, one at a time, from a clean commit.

Each run writes into a fresh folder beside data/; only a run that ends complete replaces its reference, so a
failed or interrupted run loses nothing already recorded.  The runs go one after another (never two at once:
they would measure each other), each waiting for a quiet machine as every live run does.

    python scripts/remake_references.py                       # every reference
    python scripts/remake_references.py lmax-queue/postgres   # some of them
    python scripts/remake_references.py --allow-dirty ...     # a trial: the recordings will say "-dirty"
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = [
    ("ghost-cleanup", "postgres"),
    ("last-page-insert", "postgres"),
    ("lmax-queue", "postgres"),
    ("logcache-spinlock", "postgres"),
    ("latch-fairness", "native"),
    ("lmax-queue", "native"),
    ("logcache-spinlock", "native"),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("only", nargs="*", help="chapter/engine pairs (default: every reference)")
    ap.add_argument("--allow-dirty", action="store_true", help="run even when code differs from the commit")
    args = ap.parse_args(argv)
    wanted = [tuple(s.split("/", 1)) for s in args.only] or REFERENCES
    unknown = [w for w in wanted if w not in REFERENCES]
    if unknown:
        ap.error(f"not a reference: {', '.join('/'.join(u) for u in unknown)}; known: "
                 + ", ".join("/".join(r) for r in REFERENCES))
    sys.path.insert(0, str(ROOT / "src"))
    from contention_book.harness.live import git_commit

    commit = git_commit()
    if not args.allow_dirty and (commit is None or commit.endswith("-dirty")):
        print(f"remake_references: the code differs from its commit ({commit}); commit first, or --allow-dirty",
              file=sys.stderr)
        return 2
    staging = ROOT / "data" / ".remake"  # the old reference waits here while its successor runs
    failed, made = [], []
    for chapter, engine in wanted:
        rid = f"measured-{engine}-reference"
        dest = ROOT / "data" / chapter / rid
        old = staging / chapter / rid
        shutil.rmtree(old, ignore_errors=True)
        old.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            shutil.move(str(dest), str(old))
        # A relative destination: the manifest's command and run.log name the reference's place, not this machine's.
        cmd = [sys.executable, "-m", "contention_book.run", chapter, "--engine", engine,
               "--record-to", f"data/{chapter}/{rid}"]
        print(f"[remake] {chapter}/{engine}: {' '.join(cmd[1:])}", flush=True)
        started = time.monotonic()
        try:
            status = subprocess.run(cmd, cwd=ROOT).returncode
        except KeyboardInterrupt:
            status = 130
        manifest = dest / "manifest.json"
        state = json.loads(manifest.read_text()).get("status", {}).get("state") if manifest.exists() else None
        took = time.monotonic() - started
        if status == 0 and state == "complete":
            shutil.rmtree(old, ignore_errors=True)
            made.append(f"{chapter}/{engine}")
            print(f"[remake] {chapter}/{engine}: complete in {took:.0f} s", flush=True)
            continue
        failed.append(f"{chapter}/{engine}")
        kept = staging / "failed" / chapter / rid
        shutil.rmtree(kept, ignore_errors=True)
        kept.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            shutil.move(str(dest), str(kept))
        if old.exists():
            shutil.move(str(old), str(dest))
        print(f"[remake] {chapter}/{engine}: exit {status}, state {state}: the old reference is back; "
              f"the failed run is in {kept.relative_to(ROOT)}", flush=True)
        if status == 130:
            break
    if not failed:
        shutil.rmtree(staging, ignore_errors=True)
    untried = [f"{c}/{e}" for c, e in wanted if f"{c}/{e}" not in made + failed]
    print(f"[remake] {len(made)} of {len(wanted)} re-made" + (f"; failed: {', '.join(failed)}" if failed else "")
          + (f"; not tried (stopped): {', '.join(untried)}" if untried else ""))
    return 1 if failed or untried else 0


if __name__ == "__main__":
    sys.exit(main())
