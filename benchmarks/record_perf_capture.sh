#!/usr/bin/env bash
# Record a real, diverse `perf script` capture for benchmarks/bench_perftools.py:
# PostgreSQL under pgbench (TPC-B-like, then a hot single-row update) and a Rust
# compiler build (inferno, from the local cargo registry), each under `perf record -g`.
# Needs root (perf on other users' processes), the PostgreSQL server binaries,
# pgbench and cargo with inferno's crates already downloaded (`cargo install inferno` once; the build
# here is offline, into a throwaway root).
# Writes OUT (default .cache/perf-capture.txt, outside git); the throwaway
# cluster and perf.data files live in a temporary directory removed on exit.
# Rounds of different pgbench mixes are recorded until OUT reaches MIN_MB (no sample is repeated).
# Usage: benchmarks/record_perf_capture.sh [OUT] [MIN_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-.cache/perf-capture.txt}
MIN_MB=${2:-200}
FREQ=${FREQ:-1999}
mkdir -p "$(dirname "$OUT")"
W=$(mktemp -d /tmp/perf-capture-XXXXXX)
chmod 755 "$W"
B=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PORT=${PORT:-54399}
cleanup() {
  [ -d "$W/pgdata" ] && su postgres -c "$B/pg_ctl -D $W/pgdata stop -m immediate" >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT

# One round: start the server under perf, run one pgbench mix, stop it (perf ends with the postmaster).
pg_round() {
  local n=$1 mix=$2
  echo "[capture] round $n: PostgreSQL $(basename "$(dirname "$B")") under pgbench ($mix), perf record -g -F $FREQ"
  rm -rf "$W/pgdata"; mkdir -p "$W/pgdata" "$W/sock"; chown postgres "$W/pgdata" "$W/sock"
  su postgres -c "$B/initdb -D $W/pgdata -A trust" >/dev/null
  perf record -q -g -F "$FREQ" -o "$W/pg$n.data" -- \
    su postgres -c "$B/postgres -D $W/pgdata -k $W/sock -p $PORT -c listen_addresses=" >"$W/pg.log" 2>&1 &
  for _ in $(seq 50); do su postgres -c "$B/pg_isready -h $W/sock -p $PORT" >/dev/null 2>&1 && break; sleep 0.2; done
  su postgres -c "$B/pgbench -h $W/sock -p $PORT -i -s 8 postgres" >/dev/null 2>&1
  case $mix in
    hot-update) printf 'UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;\n' >"$W/hot.sql"
                chmod 644 "$W/hot.sql"; args="-f $W/hot.sql" ;;
    *) args="-b $mix" ;;
  esac
  su postgres -c "$B/pgbench -h $W/sock -p $PORT -c 6 -j 2 -T $PG_SECONDS $args postgres" 2>/dev/null | grep -E "^tps" || true
  su postgres -c "$B/pg_ctl -D $W/pgdata stop -m fast" >/dev/null
  wait
  perf script -i "$W/pg$n.data" 2>/dev/null >>"$OUT"
}

: >"$OUT"
PG_SECONDS=${PG_SECONDS:-40}
echo "[capture] Rust compiler build (inferno from the cargo registry), perf record -g -F $FREQ"
perf record -q -g -F "$FREQ" -o "$W/cc.data" -- cargo install --offline --quiet --root "$W/cargo-root" inferno \
  >"$W/cargo.log" 2>&1 || { echo "[capture] cargo build failed:"; tail -5 "$W/cargo.log"; exit 1; }
perf script -i "$W/cc.data" 2>/dev/null >>"$OUT"
n=0
for mix in tpcb-like hot-update simple-update select-only tpcb-like hot-update simple-update select-only; do
  [ "$(stat -c %s "$OUT")" -ge $((MIN_MB * 1000000)) ] && break
  n=$((n + 1)); pg_round $n $mix
done
echo "[capture] wrote $OUT ($(( $(stat -c %s "$OUT") / 1000000 )) MB)"
