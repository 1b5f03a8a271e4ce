#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds lz4, xxhash and check for musl from Debian's source packages into
# PREFIX (static libraries, headers, .pc files): Debian ships no musl
# builds of them, and the musl step of scripts/test links against these.
# zstd is left out: it is optional, and its source build alone would take
# longer than the rest together.  Called by scripts/setup (as root: it may
# add a deb-src entry mirroring the system's own repository); does nothing
# once PREFIX/.complete exists (remove PREFIX to build anew).
#   musl-deps.sh PREFIX
set -euo pipefail
prefix=${1:?usage: musl-deps.sh PREFIX}
command -v musl-gcc >/dev/null || { echo "musl-deps: musl-gcc missing (musl-tools)" >&2; exit 1; }

if [ -e "$prefix/.complete" ]; then
	echo "musl-deps: $prefix is there"
	exit 0
fi

. /etc/os-release
# The system's main repository, as apt already knows it (no host named here).
repo=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(TARGET_OF)' |
	awk -v s="$VERSION_CODENAME" '$2 == s && $3 == "deb" { print $1; exit }')
[ -n "$repo" ] || { echo "musl-deps: no $VERSION_CODENAME repository in apt's sources" >&2; exit 1; }
if ! apt-get indextargets --format '$(RELEASE) $(TARGET_OF)' |
	grep -qx "$VERSION_CODENAME deb-src"; then
	cat >/etc/apt/sources.list.d/libbvec-src.sources <<EOF
Types: deb-src
URIs: $repo
Suites: $VERSION_CODENAME
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	# One stale index elsewhere (a mirror mid-sync) fails the whole update;
	# only the Sources index matters here, and apt-get source says if it
	# did not arrive.
	apt-get update -qq || echo "musl-deps: apt-get update reported errors; going on" >&2
fi

want=$(for p in lz4 xxhash check; do
	echo "$p $(apt-cache showsrc --only-source "$p" | awk '/^Version:/ { print $2; exit }')"
done)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# apt's sandbox user cannot write to a root-owned mktemp directory.
chmod 755 "$work"
log=$work/log
# The build tools' chatter goes to a log, shown only when a step fails.
run() { "$@" >>"$log" 2>&1 || { cat "$log" >&2; echo "musl-deps: failed: $*" >&2; exit 1; }; }
run apt-get source -qq --download-only lz4 xxhash check
# apt checked the files against the signed Sources index already.
for dsc in *.dsc; do
	run dpkg-source --no-check -x "$dsc"
done
rm -rf "$prefix"
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
jobs=$(nproc)

run make -C lz4-*/lib -j"$jobs" install BUILD_SHARED=no PREFIX="$prefix" CC=musl-gcc

cd "$work"/xxhash-*/
run make -j"$jobs" CC=musl-gcc libxxhash.a
run install -m644 libxxhash.a "$prefix/lib/"
run install -m644 xxhash.h "$prefix/include/"
# Written here: Debian's patched Makefile puts /usr in its own.
xxh=$(awk '$1 == "xxhash" { print $2 }' <<<"$want")
cat >"$prefix/lib/pkgconfig/libxxhash.pc" <<EOF
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: xxhash
Description: extremely fast hash algorithm (musl, static)
Version: ${xxh%-*}
Libs: -L\${libdir} -lxxhash
Cflags: -I\${includedir}
EOF

# Only the library: check's own tests and docs are not ours to run.
cd "$work"/check-*/
run ./configure CC=musl-gcc --prefix="$prefix" --disable-shared --enable-static \
	--enable-subunit=no --disable-build-docs
run make -j"$jobs" -C lib
run make -j"$jobs" -C src
run make -C src install
run make install-pcdataDATA install-includeHEADERS
# Debian's patch names the static library libcheck_pic in check.pc.
ln -sf libcheck.a "$prefix/lib/libcheck_pic.a"

echo "$want" >"$prefix/.complete"
echo "musl-deps: lz4, xxhash and check for musl in $prefix"
