#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The no-libc program for big-endian targets, run under qemu-user: MIPS
# (32-bit, o32) and s390x (64-bit).  It needs no target C library, only a
# cross compiler.  Also checks the 32-bit struct layout on MIPS.  Skips (77)
# when no cross compiler and qemu pair is installed (scripts/setup installs
# gcc-mips-linux-gnu, gcc-s390x-linux-gnu and qemu-user-static).
#   cross.sh SOURCE_ROOT BUILD_ROOT
set -euo pipefail
src=${1:?usage: cross.sh SOURCE_ROOT BUILD_ROOT}
build=${2:?usage: cross.sh SOURCE_ROOT BUILD_ROOT}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ran=0
for arch in mips s390x; do
	cc=$arch-linux-gnu-gcc
	qemu=qemu-$arch-static
	command -v "$cc" >/dev/null && command -v "$qemu" >/dev/null || continue
	extra=()
	[ "$arch" = mips ] && extra=(-mno-abicalls)
	flags=(-std=c11 -O2 -Wall -Wextra -Werror -DBVEC_FREESTANDING -DBVEC_BUILDING
		-ffreestanding -nostdinc -idirafter "$("$cc" -print-file-name=include)"
		-fno-pie -fno-pic -fno-stack-protector "${extra[@]}"
		-I "$src/include" -I "$build/include" -I "$src/src/bvec")
	"$cc" "${flags[@]}" -nostdlib -static -Wl,-e,_start -o "$out/nolibc-$arch" \
		"$src/tests/nolibc/nolibc.c" "$src"/src/bvec/{bio,bio_set,integrity,status,version,os_none}.c
	if [ "$arch" = mips ]; then
		"$cc" "${flags[@]}" -fsyntax-only "$src/tests/headers/abi32.c"
		echo "mips: 32-bit big-endian struct layout as tests/headers/abi_layout.h says"
	fi
	status=0
	"$qemu" "$out/nolibc-$arch" || status=$?
	[ "$status" = 0 ] || { echo "$arch: check $status failed"; exit 1; }
	echo "$arch: the bio core without a C library passed, big-endian"
	ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "skip: no cross compiler with qemu-user"; exit 77; }
echo "$ran passed, 0 failed"
