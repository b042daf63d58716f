#!/usr/bin/env bash
# Build PostgreSQL 15 from Debian's own source package, unstripped and with frame pointers, so that perf names
# every frame of a backend's stack (Debian's binary is stripped: its static functions show as [unknown]).
#
#   bash scripts/build_pg_named.sh [PREFIX]      # default PREFIX: .cache/pg15-named in the checkout
#   PG_BINDIR=PREFIX/bin make record CH=last-page-insert ENGINE=postgres
#
# The default sits beside the embedded cluster (.cache/pg): run as root, the server runs as the postgres user,
# who must be able to reach the binaries (a home folder such as /root is closed to it). PostgreSQL's
# installations are relocatable, so a built PREFIX may be moved.
#
# Needs: Debian or Ubuntu with deb.debian.org reachable for source packages, gcc, make, flex, bison, and the
# installed postgresql-15-pg-wait-sampling package (its library is copied in: the same major version's ABI).
# Takes about 10 minutes on 2 CPUs. Nothing outside PREFIX and a temporary folder is changed (apt's own lists
# and sources are untouched: a private sources list and list folder are used).
set -euo pipefail
PREFIX="$(realpath -m "${1:-$(dirname "$0")/../.cache/pg15-named}")"
VERSION_WANTED="$(dpkg-query -W -f='${Version}' postgresql-15 2>/dev/null || true)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p lists/partial
# Sources of the same suites the machine installs from (bookworm and its updates and security suites).
cat > src.sources <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
APT=(apt-get -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=/dev/null
     -o Dir::Etc::sourcelist="$work/src.sources" -o Dir::State::Lists="$work/lists")
echo "[pg-named] fetching the source of postgresql-15${VERSION_WANTED:+ $VERSION_WANTED}"
"${APT[@]}" update >/dev/null
"${APT[@]}" source --download-only "postgresql-15${VERSION_WANTED:+=$VERSION_WANTED}" >/dev/null
tar xf postgresql-15_*.orig.tar.bz2
cd postgresql-15.*/
echo "[pg-named] configure and build into $PREFIX (-O2 -g -fno-omit-frame-pointer, not stripped)"
./configure --prefix="$PREFIX" --without-readline --without-icu --without-zlib \
  CFLAGS="-O2 -g -fno-omit-frame-pointer" >"$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; exit 1; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -20 "$work/make.log"; exit 1; }
make install >/dev/null
make -C contrib -j"$(nproc)" >/dev/null 2>&1 && make -C contrib install >/dev/null
# pg_wait_sampling: Debian's library for the same major version (no source package of it is needed).
lib="$(/usr/lib/postgresql/15/bin/pg_config --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)"
if [ -f "$lib/pg_wait_sampling.so" ]; then
  cp "$lib/pg_wait_sampling.so" "$("$PREFIX/bin/pg_config" --pkglibdir)/"
  cp /usr/share/postgresql/15/extension/pg_wait_sampling* "$("$PREFIX/bin/pg_config" --sharedir)/extension/"
else
  echo "[pg-named] postgresql-15-pg-wait-sampling is not installed: the wait sampler will poll pg_stat_activity"
fi
echo "[pg-named] done: PG_BINDIR=$PREFIX/bin"
