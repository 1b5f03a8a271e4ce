#!/bin/sh
# SPDX-License-Identifier: MIT
# Fails if a function of zram.c takes a slot lock it does not release, or
# releases one it did not take (issue 8: as Linux's zram_drv.c, every
# lock/unlock pair lives in one function).  Counts calls per function body;
# the definitions of slot_lock() and slot_unlock() themselves are skipped.
set -eu
src=${1:?usage: lock_pairs.sh zram.c}
awk '
/^[a-z].*\(/ && !/;$/ { fn = $0; sub(/\(.*/, "", fn); sub(/.*[ *]/, "", fn) }
/^}/ {
	if (fn != "slot_lock" && fn != "slot_unlock" && locks != unlocks) {
		printf "%s: %s: %d slot_lock() but %d slot_unlock()\n", FILENAME, fn, locks, unlocks
		bad = 1
	}
	if (fn != "") checked++
	locks = unlocks = 0; fn = ""
}
fn != "" { locks += gsub(/slot_lock\(/, "&"); unlocks += gsub(/slot_unlock\(/, "&") }
END {
	if (checked < 5) { print FILENAME ": no functions found"; exit 1 }
	exit bad
}' "$src"
