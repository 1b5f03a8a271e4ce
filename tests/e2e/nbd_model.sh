#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A differential test: random NBD requests, the same applied to a flat
# bytearray, and the disk must always read back as that model.  Each
# configuration gets a fresh nbdkit: the default, multi_page=on, stripes=4,
# checksum=on, a mem_limit that refuses writes, and the tiers (writeback to
# a backing file, recompression) with a pause that lets pages move while the
# checks go on.  Writes (with and without FUA), trims, zeroes (with holes or
# NBD_CMD_FLAG_NO_HOLE, fast or not), reads, flushes and block status go at
# page, sector and byte offsets and lengths, across pages and the end of the
# disk, up to 4 MiB, with text, zero, same-filled and random pages: every
# path through the plugin (bounce buffer, groups, marks, huge pages); then
# some in flight at once on disjoint bytes of shared sectors, and two
# connections.  The model is the plugin's documented behaviour: trim zeroes
# the whole pages of its range and leaves the rest, and is never refused; a
# request past the end or of no bytes changes nothing (nbdkit refuses both);
# a refused request (EIO, only at mem_limit) leaves each page's part of its
# range all old or all new (for a zero, each part on either side of where
# its whole sectors start and end), and the whole pages of a refused zero
# zeroed.  Extents must start where asked, follow each other, stay inside
# the disk, and whatever they call zero must be zero.  NBD_MODEL_SEED (1)
# and NBD_MODEL_OPS (400 a configuration) change the run, NBD_MODEL_ONLY=NAME
# runs one configuration, and NBD_MODEL_TRACE=1 prints every request: a
# failure names seed, configuration and request, the last requests that
# changed the bytes found wrong, and the requests before it.
. "$(dirname "$0")/nbd_lib.sh"

[ -n "$PY" ] || skip "no Python libnbd bindings (Debian: python3-libnbd)"
SEED=${NBD_MODEL_SEED:-1}
OPS=${NBD_MODEL_OPS:-400}
MiB=$((1 << 20))
LD_PRELOAD=$SAN_PRELOAD nbdkit "$PLUGIN" --dump-plugin >"$WORK/dump"
RECOMP=lz4hc
grep -q 'zram_algorithms=.*zstd' "$WORK/dump" && RECOMP=zstd

cat >"$WORK/model.py" <<'PY'
import collections, errno, os, random, sys, time
import nbd

URI, NAME, MODE, SEED, OPS, STATS = sys.argv[1:7]
SEED, OPS = int(SEED), int(OPS)
LIMIT, TIERS = MODE == "limit", MODE == "tiers"
TRACE = os.environ.get("NBD_MODEL_TRACE") == "1"
rng = random.Random(f"{SEED}/{NAME}")
SECTOR = 512

def connect():
    h = nbd.NBD()
    h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
    # NBD allows any bytes, ranges past the end (refused by the server) and
    # no bytes at all: let them go out.
    h.set_strict_mode(h.get_strict_mode() & ~(nbd.STRICT_ALIGN | nbd.STRICT_BOUNDS |
                                              nbd.STRICT_ZERO_SIZE))
    h.connect_uri(URI)
    return h

h = connect()
SIZE = h.get_size()
PAGE = h.get_block_size(nbd.SIZE_PREFERRED)
FAST_ZERO = h.can_fast_zero()
model = bytearray(SIZE)
ZEROS = bytes(SIZE + 8 * PAGE)
st = collections.Counter()
recent = collections.deque(maxlen=12)
opno = 0

history = []  # (request, what, offset, length) of every change asked for

def log(what, off=None, n=None):
    recent.append(f"#{opno} {what}")
    if off is not None:
        history.append((opno, what, off, n))
    if TRACE:
        print(f"{NAME} #{opno} {what}", file=sys.stderr)

def fail(msg):
    print(f"FAIL: {NAME} (NBD_MODEL_SEED={SEED} NBD_MODEL_OPS={OPS}), request #{opno}: {msg}",
          file=sys.stderr)
    print("the last requests, this one last:", file=sys.stderr)
    for r in recent:
        print("  " + r, file=sys.stderr)
    sys.exit(1)

def touched(pos):
    """The last requests that changed byte pos, for a failure's message."""
    t = [f"#{no} {w}" for no, w, o, m in history if o <= pos < o + m][-4:]
    return "; the last requests over it: " + ("; ".join(t) if t else "none (never changed)")

# ---- data: text, zero, same-filled (a word repeated in phase with the
# disk's offsets, so that pieces written apart fill a page alike), random
# (stored raw, huge), the model's bytes again, or them with one byte changed.
words = [bytes(rng.choice(b"etaoinshrdlucmfwyp") for _ in range(rng.randint(2, 9)))
         for _ in range(300)]
TEXT = b" ".join(rng.choice(words) for _ in range(60000))[:256 << 10]
WORDS = [bytes(8), b"\xff" * 8] + [rng.randbytes(8) for _ in range(3)]
KINDS = ["text", "zero", "same", "random", "again", "tweak"]
KIND_W = [30, 15, 20, 20, 5, 10]

def chunk(off, n, kind):
    if kind == "text":
        s = rng.randrange(len(TEXT))
        return ((TEXT[s:] + TEXT) * (n // len(TEXT) + 2))[:n]
    if kind == "zero":
        return bytes(n)
    if kind == "same":
        w = rng.choice(WORDS)
        return (w * (n // 8 + 2))[off % 8:off % 8 + n]
    if kind == "random":
        return rng.randbytes(n)
    b = bytearray(model[off:off + n])
    if kind == "tweak":
        b[rng.randrange(n)] ^= 1 << rng.randrange(8)
    return bytes(b)

def data_for(off, n):
    """n bytes to write at off: one kind, or a kind a page of the disk."""
    if rng.random() < 0.5:
        return chunk(off, n, rng.choices(KINDS, KIND_W)[0])
    parts, pos, end = [], off, off + n
    while pos < end:
        nxt = min(end, (pos // PAGE + 1) * PAGE)
        parts.append(chunk(pos, nxt - pos, rng.choices(KINDS, KIND_W)[0]))
        pos = nxt
    return b"".join(parts)

# ---- ranges: page, sector or byte granular; tiny to 4 MiB; often in a hot
# first MiB, across a page's edge, or at the end of the disk.
def gen_range(big=True):
    align = rng.choices(["page", "sector", "byte"], [4, 3, 3])[0]
    size = rng.choices(["tiny", "small", "pages", "big", "huge"],
                       [2, 4, 4, 2, 0.4 if big else 0])[0]
    n = {"tiny": lambda: rng.randint(1, 64),
         "small": lambda: rng.randint(1, 2 * PAGE),
         "pages": lambda: rng.randint(1, 16 * PAGE),
         "big": lambda: rng.randint(1, 256 * PAGE),
         "huge": lambda: rng.randint(1, 4 << 20)}[size]()
    where = rng.choices(["hot", "any", "end", "cross"], [4, 3, 1, 2])[0]
    if where == "hot":
        off = rng.randrange(1 << 20)
    elif where == "any":
        off = rng.randrange(SIZE)
    elif where == "end":
        off = SIZE - n - rng.randrange(2 * PAGE)
    else:
        off = rng.randrange(1, SIZE // PAGE) * PAGE - rng.randint(1, min(n, PAGE))
    g = {"page": PAGE, "sector": SECTOR, "byte": 1}[align]
    n = max(g, n // g * g)
    off = off // g * g
    n = min(n, SIZE)
    off = max(0, min(off, SIZE - n))
    return off, n

# ---- checks
def describe(b):
    if not any(b):
        return "zeroes"
    if b == b[:8] * (len(b) // 8):
        return f"the word {bytes(b[:8]).hex()} repeated"
    return bytes(b[:16]).hex() + "..."

def compare(got, off, what):
    n = len(got)
    st["checked"] += n
    if got == model[off:off + n]:
        return
    i = next(i for i in range(n) if got[i] != model[off + i])
    j = i
    while j < n and got[j] != model[off + j]:
        j += 1
    p = (off + i) // PAGE * PAGE
    q = min(p + PAGE, SIZE)
    fail(f"{what}: {j - i} bytes differ from {off + i} (first run), in the page at {p}: "
         f"the model holds {describe(model[off + i:off + j])}, the disk "
         f"{describe(got[i:j])}; the model's page: {describe(model[p:q])}, "
         f"the disk's: {describe(h.pread(q - p, p))}{touched(off + i)}")

def check(c, off, n, what):
    """The disk, read on c, equals the model over [off, off + n) (clipped)."""
    lo, hi = max(0, off), min(SIZE, off + n)
    for a in range(lo, hi, 8 << 20):
        b = min(hi, a + (8 << 20))
        try:
            got = c.pread(b - a, a)
        except nbd.Error as e:
            fail(f"{what}: a read of {b - a} bytes at {a} failed: {e}")
        compare(got, a, what)

def refused(e, what):
    if not LIMIT:
        fail(f"{what} was refused: {e}")
    if e.errnum != errno.EIO:
        fail(f"{what} was refused with {e}, not EIO")
    st["refused"] += 1

def settle(c, off, n, new, whole, what):
    """After a refused change of [off, off + n) to new: each piece reads all
    old or all new, the whole pages of a zero (whole) new; the model takes
    what the disk holds.  A piece is a page's part of the range, and for a
    zero also cut where its whole sectors start and end: the
    plugin zeroes a partial sector apart from the whole ones, and stores
    each (nbd_mem_limit.sh)."""
    try:
        got = c.pread(n, off)
    except nbd.Error as e:
        fail(f"after {what} was refused, reading it back failed: {e}")
    end = off + n
    cuts = {p for p in range((off // PAGE + 1) * PAGE, end, PAGE)}
    if whole:
        cuts |= {(off + SECTOR - 1) // SECTOR * SECTOR, end // SECTOR * SECTOR}
    edges = [off] + sorted(x for x in cuts if off < x < end) + [end]
    for pos, nxt in zip(edges, edges[1:]):
        g, o, w = got[pos - off:nxt - off], model[pos:nxt], new[pos - off:nxt - off]
        if g == w:
            st["refused_pieces_new"] += g != o
            model[pos:nxt] = g
        elif g != o:
            same_o = sum(x == y for x, y in zip(g, o))
            same_w = sum(x == y for x, y in zip(g, w))
            fail(f"{what} was refused and left bytes {pos}-{nxt} neither old nor new "
                 f"({same_o} bytes as old, {same_w} as new): old {describe(o)}, new "
                 f"{describe(w)}, read {describe(g)}{touched(pos)}")
        elif whole and pos % PAGE == 0 and nxt - pos == PAGE:
            fail(f"{what} was refused and left the whole page at {pos} as it was "
                 f"({describe(o)}), not zeroed")
        else:
            st["refused_pieces_old"] += 1

# ---- requests; each returns True if the disk changed as asked
def flagstr(f):
    names = [(nbd.CMD_FLAG_FUA, "fua"), (nbd.CMD_FLAG_NO_HOLE, "no_hole"),
             (nbd.CMD_FLAG_FAST_ZERO, "fast"), (nbd.CMD_FLAG_REQ_ONE, "req_one")]
    return ",".join(s for b, s in names if f & b) or "-"

def trim_new(off, n):
    """What a trim makes of [off, off + n): its whole pages zeroed."""
    a = (off + PAGE - 1) // PAGE * PAGE
    b = (off + n) // PAGE * PAGE
    new = bytearray(model[off:off + n])
    if a < b:
        new[a - off:b - off] = bytes(b - a)
    return bytes(new)

def write(c, off, data, flags, tag=""):
    what = f"write{tag} of {len(data)} bytes at {off} ({flagstr(flags)})"
    log(what, off, len(data))
    st["writes"] += 1
    try:
        c.pwrite(data, off, flags)
    except nbd.Error as e:
        refused(e, what)
        settle(c, off, len(data), data, False, what)
        return False
    model[off:off + len(data)] = data
    return True

def trim(c, off, n, flags, tag=""):
    what = f"trim{tag} of {n} bytes at {off} ({flagstr(flags)})"
    log(what, off, n)
    st["trims"] += 1
    new = trim_new(off, n)
    try:
        c.trim(n, off, flags)
    except nbd.Error as e:
        fail(f"{what} failed: {e}; a trim stores nothing, so it cannot be refused")
    model[off:off + n] = new
    return True

def zero(c, off, n, flags, tag=""):
    what = f"zero{tag} of {n} bytes at {off} ({flagstr(flags)})"
    log(what, off, n)
    st["zeroes"] += 1
    try:
        c.zero(n, off, flags)
    except nbd.Error as e:
        refused(e, what)
        settle(c, off, n, bytes(n), True, what)
        return False
    model[off:off + n] = bytes(n)
    return True

def zero_flags():
    f = 0
    if rng.random() < 0.5:
        f |= nbd.CMD_FLAG_NO_HOLE
    if FAST_ZERO and rng.random() < 0.3:
        f |= nbd.CMD_FLAG_FAST_ZERO
    if rng.random() < 0.2:
        f |= nbd.CMD_FLAG_FUA
    return f

def block_status(c, off, n, one):
    """Extents over [off, off + n), asked again from where each answer
    stops, as a client does."""
    flags = nbd.CMD_FLAG_REQ_ONE if one else 0
    log(f"block_status of {n} bytes at {off} ({flagstr(flags)})")
    st["block_status"] += 1
    pos, end = off, off + n
    while pos < end:
        got = []
        try:
            c.block_status(end - pos, pos,
                           lambda ctx, o, e, err: got.append((ctx, o, list(e))) or 0, flags)
        except nbd.Error as e:
            fail(f"block status of {end - pos} bytes at {pos} failed: {e}")
        got = [g for g in got if g[0] == nbd.CONTEXT_BASE_ALLOCATION]
        if len(got) != 1:
            fail(f"block status at {pos}: {len(got)} base:allocation answers, not 1")
        _, o, e = got[0]
        if o != pos:
            fail(f"block status asked at {pos} answered from {o}")
        if not e or len(e) % 2:
            fail(f"block status at {pos}: no extents ({e})")
        if one and len(e) != 2:
            fail(f"block status at {pos} with REQ_ONE: {len(e) // 2} extents")
        if one and e[0] > end - pos:
            fail(f"block status at {pos} with REQ_ONE: an extent of {e[0]} bytes for a "
                 f"request of {end - pos}")
        cur = pos
        for i in range(0, len(e), 2):
            length, t = e[i], e[i + 1]
            if length == 0:
                fail(f"block status at {pos}: an extent of no bytes at {cur}")
            if cur + length > SIZE:
                fail(f"block status at {pos}: extent {cur}+{length} passes the end ({SIZE})")
            if t & ~(nbd.STATE_HOLE | nbd.STATE_ZERO):
                fail(f"block status at {pos}: unknown flags {t:#x} at {cur}")
            if t & nbd.STATE_HOLE and not t & nbd.STATE_ZERO:
                fail(f"block status: a hole at {cur}+{length} that does not read as zeroes")
            if t & nbd.STATE_ZERO:
                st["zero_extent_bytes"] += length
                if model[cur:cur + length] != ZEROS[:length]:
                    k = next(k for k in range(length) if model[cur + k])
                    fail(f"block status calls {cur}+{length} {'a hole' if t & 1 else 'zero'}, "
                         f"but the model holds data at {cur + k} "
                         f"({describe(model[cur + k:cur + k + 16])}; the disk reads "
                         f"{describe(c.pread(16, cur + k))}){touched(cur + k)}")
            st["extents"] += 1
            cur += length
        pos = cur

def out_of_range(c):
    """A request past the end, or of no bytes: refused or harmless, never a
    change."""
    kind = rng.choice(["read", "write", "trim", "zero", "block_status"])
    if rng.random() < 0.25:
        off, n = rng.randint(0, SIZE), 0
    else:
        n = rng.randint(1, 3 * PAGE)
        off = rng.choice([SIZE - n + rng.randint(1, n), SIZE, SIZE + rng.randint(1, PAGE),
                          2 * SIZE, (1 << 63) - n // 2])
    log(f"{kind} of {n} bytes at {off} (past the end or empty)")
    st["out_of_range"] += 1
    lo = max(0, min(off, SIZE) - PAGE)
    try:
        if kind == "read":
            r = c.pread(n, off)
            if n and len(r) != n:
                fail(f"a read past the end gave {len(r)} bytes")
        elif kind == "write":
            c.pwrite(rng.randbytes(n), off)
        elif kind == "trim":
            c.trim(n, off)
        elif kind == "zero":
            c.zero(n, off, zero_flags())
        else:
            c.block_status(n, off, lambda *a: 0)
        ok = True
    except nbd.Error:
        ok = False
    if ok and (n or off > SIZE):
        fail(f"a {kind} of {n} bytes at {off}, past the end of {SIZE}, succeeded")
    if not c.aio_is_ready():
        fail(f"the connection died after a {kind} of {n} bytes at {off}")
    check(c, lo, 2 * PAGE, f"the disk near {off} after a {kind} past the end")

def one_op(c, other=None):
    """One random request on c, then its range (and a page around) read back
    on c or, with two connections, on the other."""
    op = rng.choices(["write", "read", "trim", "zero", "bs", "flush", "bad"],
                     [30, 12, 10, 12, 10, 3, 3])[0]
    if op == "bad":
        return out_of_range(c)
    if op == "flush":
        log("flush")
        st["flushes"] += 1
        try:
            c.flush()
        except nbd.Error as e:
            fail(f"flush failed: {e}")
        return
    off, n = gen_range()
    if op == "read":
        log(f"read of {n} bytes at {off}")
        st["reads"] += 1
        return check(c, off, n, f"read of {n} bytes at {off}")
    if op == "bs":
        return block_status(c, off, n, rng.random() < 0.2)
    if op == "write":
        write(c, off, data_for(off, n), nbd.CMD_FLAG_FUA if rng.random() < 0.2 else 0)
    elif op == "trim":
        trim(c, off, n, nbd.CMD_FLAG_FUA if rng.random() < 0.2 else 0)
    else:
        zero(c, off, n, zero_flags())
    check(other or c, off - PAGE, n + 2 * PAGE, f"read back after #{opno} on "
          f"{'the other connection' if other else 'the same connection'}")

# ---- requests in flight at once, on disjoint bytes: pieces of a few
# pages cut at byte, sector and page offsets (so neighbours share sectors
# and pages, and a partial sector's read-modify-write races whole-sector
# writes beside it), and ranges elsewhere.
def disjoint_ranges(k):
    out = []
    span = rng.choice([1, 2, 8]) * PAGE
    base = rng.randrange(0, SIZE - span) // PAGE * PAGE
    if rng.random() < 0.5:
        base = rng.randrange(0, (1 << 20) - span) // PAGE * PAGE
    cuts = set()
    for _ in range(rng.randint(k // 2, k)):
        g = rng.choices([1, SECTOR, PAGE], [3, 1, 1])[0]
        cuts.add(rng.randrange(1, span) // g * g)
    edges = [0] + sorted(c for c in cuts if c > 0) + [span]
    for a, b in zip(edges, edges[1:]):
        if b > a:
            out.append((base + a, b - a))
    while len(out) < k:
        off, n = gen_range(big=False)
        if all(off + n <= o or o + m <= off for o, m in out):
            out.append((off, n))
    rng.shuffle(out)
    return out

def batch(conns):
    global opno
    todo = []
    for off, n in disjoint_ranges(rng.randint(2, 24)):
        opno += 1
        c = rng.choice(conns)
        tag = f" in flight on connection {conns.index(c) + 1}"
        op = rng.choices(["write", "read", "trim", "zero"], [5, 3, 1, 2])[0]
        if op == "write":
            data = data_for(off, n)
            flags = nbd.CMD_FLAG_FUA if rng.random() < 0.2 else 0
            what = f"write{tag} of {n} bytes at {off} ({flagstr(flags)})"
            cookie = c.aio_pwrite(nbd.Buffer.from_bytearray(bytearray(data)), off, flags=flags)
            todo.append((c, cookie, what, off, n, data, False, None))
            st["writes"] += 1
        elif op == "read":
            buf = nbd.Buffer(n)
            what = f"read{tag} of {n} bytes at {off}"
            todo.append((c, c.aio_pread(buf, off), what, off, n, None, False, buf))
            st["reads"] += 1
        elif op == "trim":
            flags = nbd.CMD_FLAG_FUA if rng.random() < 0.2 else 0
            what = f"trim{tag} of {n} bytes at {off} ({flagstr(flags)})"
            todo.append((c, c.aio_trim(n, off, flags=flags), what, off, n, trim_new(off, n),
                         True, None))
            st["trims"] += 1
        else:
            flags = zero_flags()
            what = f"zero{tag} of {n} bytes at {off} ({flagstr(flags)})"
            todo.append((c, c.aio_zero(n, off, flags=flags), what, off, n, bytes(n), True,
                         None))
            st["zeroes"] += 1
        log(what, off if todo[-1][7] is None else None, n)
    while any(c.aio_in_flight() for c in conns):
        for c in conns:
            if c.aio_in_flight():
                c.poll(-1 if len(conns) == 1 else 1)
    for c, cookie, what, off, n, new, whole, buf in todo:
        try:
            c.aio_command_completed(cookie)
        except nbd.Error as e:
            if buf is not None:
                fail(f"{what} failed: {e}")
            if what.startswith("trim"):
                fail(f"{what} failed: {e}; a trim stores nothing, so it cannot be refused")
            refused(e, what)
            settle(c, off, n, new, whole, what)
            continue
        if buf is not None:
            compare(buf.to_bytearray(), off, what)
        else:
            model[off:off + n] = new
    for c, cookie, what, off, n, new, whole, buf in todo:
        if buf is None:
            check(rng.choice(conns), off - PAGE, n + 2 * PAGE, f"read back after {what}")

def pause(why):
    """Time for the tiers: pages left alone go idle, are recompressed and
    written back; then everything is read back from where it went."""
    log(f"pause of 2 s ({why})")
    time.sleep(2)
    check(h, 0, SIZE, f"the whole disk after a pause ({why})")

def stats():
    try:
        with open(STATS) as f:
            return {l.split()[0]: [int(x) for x in l.split()[1:]] for l in f if l.strip()}
    except (OSError, ValueError):
        return {}

# ---- the run
t0 = time.monotonic()
for i in range(OPS):
    opno += 1
    one_op(h)
    if TIERS and i + 1 == OPS // 2:
        pause(f"after {i + 1} requests")
for i in range(max(2, OPS // 10)):
    batch([h])
h2 = connect()
if h2.get_size() != SIZE:
    fail(f"the second connection sees {h2.get_size()} bytes, the first {SIZE}")
for i in range(OPS // 3):
    opno += 1
    a, b = (h, h2) if rng.random() < 0.5 else (h2, h)
    one_op(a, b)
for i in range(max(2, OPS // 10)):
    batch([h, h2])
opno += 1
log("flush, then the whole disk and its extents")
h.flush()
check(h2, 0, SIZE, "the whole disk at the end")
block_status(h, 0, SIZE, False)
h2.shutdown()
h.shutdown()

if LIMIT and (not st["refused"] or st["refused"] * 2 > st["writes"] + st["zeroes"] + st["trims"]):
    fail(f"{st['refused']} of {st['writes']} writes, {st['zeroes']} zeroes and {st['trims']} "
         "trims refused: mem_limit is not where requests both pass and fail")
extra = ""
if LIMIT:
    extra = (f", {st['refused']} refused with EIO (pieces then old: "
             f"{st['refused_pieces_old']}, new: {st['refused_pieces_new']})")
if TIERS:
    s = stats()
    bd = s.get("bd_stat", [0, 0, 0])
    if bd[2] == 0:
        fail(f"no page was written back in the pauses: {s}")
    extra = f", {bd[2]} pages written back, {bd[1]} read from the backing file"
print(f"{NAME}: seed {SEED}, {opno} requests ({st['writes']} writes, {st['trims']} trims, "
      f"{st['zeroes']} zeroes, {st['reads']} reads, {st['block_status']} block status, "
      f"{st['out_of_range']} past the end{extra}), {st['checked']} bytes compared, "
      f"{st['extents']} extents checked, {time.monotonic() - t0:.1f} s")
PY

# run NAME MODE PARAMS...: a fresh nbdkit with PARAMS, the model run against
# it (MODE: plain, limit or tiers), and nbdkit stopped.  nbdkit's lines for
# requests refused on purpose (past the end, at mem_limit) are left out.
run() {
	local name=$1 mode=$2
	shift 2
	[ -z "${NBD_MODEL_ONLY:-}" ] || [ "$NBD_MODEL_ONLY" = "$name" ] || return 0
	nbd_start "$@" 2> >(grep --line-buffered -v 'invalid request: \|: I/O error$' >&2)
	"$PY" "$WORK/model.py" "$URI" "$name" "$mode" "$SEED" "$OPS" "$STATS" ||
		fail "$name: the disk and the model differ (above)"
	nbd_stop || fail "$name: nbdkit did not stop cleanly"
}

# 16 MiB and a bit, rounded up to whole pages (chunks with stripes).
SIZE=$((16 * MiB + 5000))
run default plain size=$SIZE
run multi_page plain size=$SIZE multi_page=on
run stripes4 plain size=$SIZE stripes=4 chunk=64K
run checksum plain size=$SIZE checksum=on
run mem_limit limit size=$SIZE mem_limit=3M
run writeback tiers size=$SIZE backing_dev="$WORK/backing1" writeback=idle idle_secs=1 \
	compact_secs=1 stripes=1
run recompress tiers size=$SIZE algorithm=lz4 recomp_algorithm=$RECOMP recompress=all \
	multi_page=on backing_dev="$WORK/backing2" writeback=huge idle_secs=1 compact_secs=1 stripes=1
echo "nbd_model: every configuration read back as its model"
