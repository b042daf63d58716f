"""The pg_wait_sampling profiles the chapters show (last-page insert and LMAX queue) count the client sessions'
working time only: an idle session's Client:ClientRead and the background processes' Activity:* waits, which
top an unfiltered profile, must not appear; a session's real wait (here pg_sleep's Timeout:PgSleep) must."""
from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
PROFILES = [ROOT / "workloads/last-page-insert/diagnose/postgres/03-wait-profile.sql",
            ROOT / "workloads/lmax-queue/diagnose/postgres/03-wait-profile-pg_wait_sampling.sql"]
UNFILTERED = "SELECT event_type, event, sum(count) FROM pg_wait_sampling_profile GROUP BY 1, 2;"


@pytest.fixture(scope="module")
def sampled(pg):
    """A database with pg_wait_sampling, a profile holding an idle session and a sleeping one, and psql."""
    from contention_book.harness.embedded_pg import SUPERUSER

    if "pg_wait_sampling" not in getattr(pg, "preloaded", ()):
        pytest.skip("the embedded cluster did not preload pg_wait_sampling (its package is not installed)")
    env = {**os.environ, "PGPASSWORD": pg.password, "PGCONNECT_TIMEOUT": "10"}
    psql = [str(pg.bindir / "psql"), "-X", "-q", "-A", "-t", "-F", "|", "-h", "127.0.0.1", "-p", str(pg.port),
            "-U", SUPERUSER]
    subprocess.run([*psql, "-d", "postgres", "-c", "DROP DATABASE IF EXISTS wait_profiles"], env=env, check=True)
    subprocess.run([*psql, "-d", "postgres", "-c", "CREATE DATABASE wait_profiles"], env=env, check=True)
    dsn = f"host=127.0.0.1 port={pg.port} user={SUPERUSER} password={pg.password} dbname=wait_profiles"
    with psycopg.connect(dsn, autocommit=True) as admin, psycopg.connect(dsn, autocommit=True) as idle:
        admin.execute("CREATE EXTENSION IF NOT EXISTS pg_wait_sampling")
        idle.execute("SELECT 1")  # then sits idle in ClientRead for the whole profile
        admin.execute("SELECT pg_wait_sampling_reset_profile()")
        sleeper = threading.Thread(target=lambda: psycopg.connect(dsn, autocommit=True).execute("SELECT pg_sleep(2)"))
        sleeper.start()
        time.sleep(1.0)
        outputs = {p.name: subprocess.run([*psql, "-d", "wait_profiles", "-v", "ON_ERROR_STOP=1", "-f", str(p)],
                                          env=env, capture_output=True, text=True, check=True).stdout
                   for p in PROFILES}
        raw = admin.execute(UNFILTERED).fetchall()
        sleeper.join()
    return outputs, raw


def test_an_unfiltered_profile_is_dominated_by_idle_and_background_waits(sampled):
    _, raw = sampled
    events = {(t, e) for t, e, _ in raw}
    assert ("Client", "ClientRead") in events  # the idle session: what the filter must take out
    assert any(t == "Activity" for t, _ in events)  # the background processes' main loops


@pytest.mark.parametrize("name", [p.name for p in PROFILES])
def test_the_chapters_profiles_keep_working_time_only(sampled, name):
    rows = [line.split("|") for line in sampled[0][name].splitlines() if line.strip()]
    events = {(r[0], r[1]) for r in rows}
    assert ("Timeout", "PgSleep") in events, rows  # the sleeping client session's wait is kept
    assert ("Client", "ClientRead") not in events, rows
    assert not any(t == "Activity" for t, _ in events), rows
