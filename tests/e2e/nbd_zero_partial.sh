#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A zero with holes allowed (no NBD_CMD_FLAG_NO_HOLE) of bytes that are not
# whole sectors is a read-modify-write of their sectors in the plugin.
# Where those bytes read as zeroes already it must change nothing, as
# zram's own WRITE_ZEROES changes nothing there: a page never written stays
# a hole in block status, and at mem_limit, where storing a page again can
# be refused, the request still succeeds.  A zero with NO_HOLE of part of a
# page of data whose bytes are zero already changes nothing either, and
# must succeed at mem_limit too; of part of a page never written it makes
# the page allocated zeroes, which needs no memory.  A trim frees whole
# pages only and leaves parts of pages as they are, as zram's discard does,
# so it too succeeds at mem_limit.
. "$(dirname "$0")/nbd_lib.sh"

[ -n "$PY" ] || skip "no Python libnbd bindings (Debian: python3-libnbd)"

nbd_start size=64M mem_limit=2M 2> >(grep --line-buffered -v ': I/O error$' >&2)
"$PY" - "$URI" <<'PY'
import nbd, random, sys

rng = random.Random(1)
h = nbd.NBD()
h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
h.set_strict_mode(h.get_strict_mode() & ~nbd.STRICT_ALIGN)
h.connect_uri(sys.argv[1])
SIZE = h.get_size()
PAGE = h.get_block_size(nbd.SIZE_PREFERRED)

def page_type(off):
    got = []
    h.block_status(PAGE, off, lambda ctx, o, e, err: got.append((ctx, e)) or 0,
                   nbd.CMD_FLAG_REQ_ONE)
    return [e for c, e in got if c == nbd.CONTEXT_BASE_ALLOCATION][0][1]

def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)

# 1. Pages never written: zeroing part of a sector of one leaves a hole.
for i, (at, n) in enumerate([(1000, 100), (4000, 96), (10, 300), (511, 2)]):
    page = (64 + 2 * i) * PAGE
    h.zero(n, page + at)
    t = page_type(page)
    if t != nbd.STATE_HOLE | nbd.STATE_ZERO:
        fail(f"zeroing {n} bytes at {at} of a page never written made it "
             f"{'allocated zeroes' if t == nbd.STATE_ZERO else t}, not a hole")
print("a page never written stays a hole after a zero of part of a sector")

# 2. At mem_limit: pages of data with zero bytes in them, then the pool
# filled until writes are refused; zeroing those zero bytes must succeed.
pages = [(16 + i) * PAGE for i in range(16)]
for p in pages:
    h.pwrite(rng.randbytes(PAGE // 2) + bytes(PAGE // 2), p)
off, refused = 128 * PAGE, 0
# Every size class a page of n random bytes lands in, the data pages' too,
# filled until refused: none has room left for a page stored again.
for n in [PAGE >> k for k in range(PAGE.bit_length()) if PAGE >> k >= 256]:
    misses = 0
    while off < SIZE // 2 and misses < 20:
        try:
            h.pwrite(rng.randbytes(n) + bytes(PAGE - n), off)
        except nbd.Error:
            misses += 1
            refused += 1
        off += PAGE
if not refused:
    fail("mem_limit refused no write: the pool was never full")
before = [h.pread(PAGE, p) for p in pages]
errors = []
for i, p in enumerate(pages):
    at = PAGE // 2 + rng.randrange(PAGE // 2 - 600)
    n = rng.randint(1, 600)
    if at % 512 == 0 and n % 512 == 0:
        n += 1
    try:
        h.zero(n, p + at)
    except nbd.Error as e:
        errors.append(f"{n} bytes at {p + at}: {e}")
for p, b in zip(pages, before):
    if h.pread(PAGE, p) != b:
        fail(f"the page at {p} changed")
if errors:
    fail(f"{len(errors)} of {len(pages)} zeroes of bytes already zero were refused at "
         f"mem_limit, e.g. {errors[0]}")
print(f"at mem_limit ({refused} writes refused), {len(pages)} zeroes of bytes already "
      "zero succeeded and changed nothing")

# 3. Still at mem_limit, the same with NO_HOLE: whole sectors and not, at
# the page's end and inside it, and over a page boundary into a page of
# zeroes only.  Each page stays as it was, data in block status.
errors = []
for i, p in enumerate(pages):
    at = PAGE // 2 + [0, 512, 17, PAGE // 4][i % 4]
    n = [PAGE // 2, 1024, 1000, PAGE // 4 - 512][i % 4]
    if i == len(pages) - 1:
        at, n = PAGE - 1024, 1024 + PAGE // 2  # into the next, a hole
    try:
        h.zero(n, p + at, nbd.CMD_FLAG_NO_HOLE)
    except nbd.Error as e:
        errors.append(f"{n} bytes at {p + at}: {e}")
for p, b in zip(pages, before):
    if h.pread(PAGE, p) != b:
        fail(f"the page at {p} changed")
    if page_type(p) != 0:
        fail(f"the page of data at {p} is no longer data in block status")
if errors:
    fail(f"{len(errors)} of {len(pages)} NO_HOLE zeroes of bytes already zero in pages of "
         f"data were refused at mem_limit, e.g. {errors[0]}")
if page_type(pages[-1] + PAGE) != nbd.STATE_ZERO:
    fail("a NO_HOLE zero of part of a page never written did not make it allocated zeroes")
print(f"at mem_limit, {len(pages)} NO_HOLE zeroes of bytes already zero in pages of data "
      "succeeded and changed nothing")

# 4. Still at mem_limit, trims of parts of pages of data, data bytes
# included, and one across a whole page between two parts.  A trim frees
# whole pages and leaves parts of pages as they are, as the kernel's zram
# does: it must not store a page again, so it succeeds, and only the whole
# page changes (to a hole).
errors = []
for i, p in enumerate(pages[:8]):
    at, n = [(0, PAGE // 2), (17, 1000), (512, PAGE - 1024), (PAGE // 4, PAGE // 2)][i % 4]
    try:
        h.trim(n, p + at)
    except nbd.Error as e:
        errors.append(f"{n} bytes at {p + at}: {e}")
whole = pages[9]
try:
    h.trim(3 * PAGE - 1024, pages[8] + 512)
except nbd.Error as e:
    errors.append(f"{3 * PAGE - 1024} bytes at {pages[8] + 512}: {e}")
if errors:
    fail(f"{len(errors)} of 9 trims of parts of pages of data were refused at mem_limit, "
         f"e.g. {errors[0]}")
for p, b in zip(pages, before):
    want = bytes(PAGE) if p == whole else b
    if h.pread(PAGE, p) != want:
        fail(f"the page at {p} is not {'zeroes' if p == whole else 'as it was'} after the trims")
if page_type(whole) != nbd.STATE_HOLE | nbd.STATE_ZERO:
    fail("the whole page inside a trim is not a hole")
print("at mem_limit, 9 trims of parts of pages of data succeeded, freeing only the whole page")
h.shutdown()
PY
nbd_stop || fail "nbdkit did not stop cleanly"
