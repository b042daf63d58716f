"""Many sessions on the book's own PostgreSQL: the cluster is started with the connections a run needs."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]


@pytest.fixture
def cluster_env():
    home = Path(tempfile.mkdtemp(prefix="contention-book-load-"))
    os.chmod(home, 0o755)
    env = {k: v for k, v in os.environ.items() if k != "CONTENTION_BOOK_PG_CLIENT"}  # PostgreSQL's default client
    yield {**env, "CONTENTION_BOOK_PG_ROOT": str(home / "pg")}, home
    from contention_book.harness.embedded_pg import EmbeddedPostgres

    if (home / "pg" / "data" / "PG_VERSION").exists():
        EmbeddedPostgres(root=home / "pg").stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("chapter, params", [
    ("logcache-spinlock", ["sessions=128", "variants=default", "capture_stacks=false"]),
    ("lmax-queue", ["sessions=64", "variants=skip_locked"]),  # 64 producers and 64 consumers
])
def test_128_connections_complete(cluster_env, chapter, params):
    env, home = cluster_env
    dest = home / "rec"
    cmd = [sys.executable, "-m", "contention_book.run", chapter, "--engine", "postgres", "--param", "duration_s=1", "--param", "repetitions=1",
           "--record-to", str(dest)] + [arg for p in params for arg in ("--param", p)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["status"] == {"state": "complete"}
    assert manifest["measured"]["client"].startswith("psycopg 3."), manifest["measured"]  # the recording names libpq
    assert "too many clients" not in out.stdout + out.stderr
