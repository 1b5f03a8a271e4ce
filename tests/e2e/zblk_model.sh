#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A differential test: a seeded random sequence of system calls on the
# disk, checked byte for byte against an in-memory model of it.  The other
# scripts each prove one promise with hand-picked cases; this one hunts for
# the case nobody picked (the edge of a sector, page, multi-page group,
# split piece or stripe chunk, met in an order nobody thought of), because
# a wrong byte handed back is the worst bug zblk can have.
#
# Writes (buffered, pwritev, O_DIRECT from an mmap'd buffer, aligned or at
# any byte), reads, punch hole and zero range (KEEP_SIZE or not), no-op and
# unsupported fallocate modes, fsync, fdatasync, SEEK_DATA/SEEK_HOLE (zblk
# has no lseek: the kernel's generic one says all data, a hole at the end),
# private mmap, truncation and I/O past the end (refused or cut short as
# zblk.1 says), at page aligned, sector aligned and odd offsets, 1 byte to
# 4 MiB.  Data: text-like, zero pages, same-filled pages (an 8-byte word, a
# mark in zram), pages one byte off those, random bytes (stored raw),
# rewrites of what is there.  Mid-run, three threads work on interleaved
# byte ranges (up to 400 KiB, then a few hundred bytes on shared sectors)
# while compaction, recompression and (with backing_dev) idle marking and
# writeback run beside them.  The whole model is compared every 97 ops.
#
# Configurations, each a fresh mount: default; -o io_uring (skipped where
# the kernel cannot); multi_page and page_cache; far (3 TiB, or 15 GiB a
# stripe with pages over 4 KiB; sparse: byte
# offsets past 2^32, sectors past 2^32, windows where a wrap would land in
# the first); backing_dev with idle marking and writeback; mem_limit set
# 512 KiB above use mid-run.  There a failed write must say EIO, change
# nothing outside its range, leave each page it touched old or new whole
# (a failed 1 MiB write does land some pages, as zblk.1 says), and the
# old bytes for a write inside one
# page; zeroes must still go in.  zblk keeps nothing across a remount
# (backing_dev is a writeback tier, not a copy): no persistence check.
# ZBLK_MODEL_SEED, ZBLK_MODEL_OPS (per configuration) and
# ZBLK_MODEL_CONFIGS (names, comma-separated) replay or narrow a run.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
SEED=${ZBLK_MODEL_SEED:-20240611}
OPS=${ZBLK_MODEL_OPS:-500}
CONFIGS=${ZBLK_MODEL_CONFIGS:-default,io_uring,multi_page,page_cache,mem_limit,far,backing}
SIZE=24M
PARAM=/sys/module/fuse/parameters/enable_uring
PY=$WORK/model.py

cat >"$PY" <<'PY'
import collections, ctypes, errno, mmap, os, random, sys, threading, time

mnt, config, seed, nops, flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), set(sys.argv[5].split(",")) - {""}
DISK = os.path.join(mnt, "disk")
SECTOR = 512
DPAGE = int(os.environ.get("PAGE_SIZE", "4096"))   # the device's page
KEEP, PUNCH, COLLAPSE, ZERO, INSERT = 0x1, 0x2, 0x8, 0x10, 0x20
MIB = 1 << 20

libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]

def fallocate(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))

class Fail(Exception):
    pass

def ctl(name, text=None):
    """Reads or writes one of zblk's control files."""
    path = os.path.join(mnt, name)
    if text is None:
        with open(path) as f:
            return f.read()
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)

def stat_field(name, n):
    return int(ctl(name).split()[n])

def first_diff(a, b):
    lo, hi = 0, min(len(a), len(b))
    while hi - lo > 64:                 # bisect on slices: fast in C
        mid = (lo + hi) // 2
        if a[lo:mid] != b[lo:mid]:
            hi = mid
        else:
            lo = mid
    for i in range(lo, min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b))

class Model:
    """The disk's bytes in windows (base, bytearray): the whole disk, or a
    few windows of a huge sparse one.  A slice must lie in one window."""
    def __init__(self, size, windows):
        self.size = size
        self.wins = [(b, bytearray(n)) for b, n in windows]

    def window(self, off):
        for base, buf in self.wins:
            if base <= off < base + len(buf) or off == base + len(buf) == self.size:
                return base, buf
        raise Fail(f"test bug: {off} is in no window of the model")

    def bounds(self, off):
        base, buf = self.window(off)
        return base, base + len(buf)

    def span(self, s):
        a = s.start or 0
        b = self.size if s.stop is None else min(s.stop, self.size)
        base, buf = self.window(a)
        return base, buf, a - base, max(a, b) - base

    def __getitem__(self, s):
        base, buf, a, b = self.span(s)
        return buf[a:b]

    def __setitem__(self, s, data):
        base, buf, a, b = self.span(s)
        if b > len(buf) or len(data) != b - a:
            raise Fail(f"test bug: {base + a}..{base + b} leaves its window of the model")
        buf[a:b] = data

class Tester:
    def __init__(self):
        self.r = random.Random(seed)
        self.fd = os.open(DISK, os.O_RDWR)
        self.dfd = os.open(DISK, os.O_RDWR | os.O_DIRECT)
        self.size = os.fstat(self.fd).st_size
        if "far" in flags:
            # where a 32-bit byte offset or sector number would wrap to
            # window 0, and the end
            # (sector 2^32 is past a disk of 64 KiB pages: no window there)
            w = 4 * MIB
            wins = [(0, w), ((1 << 32) - w // 2, w), ((1 << 41) - w // 2, w)]
            wins = [x for x in wins if x[0] + x[1] <= self.size - 2 * w]
            wins.append((self.size - 2 * w, 2 * w))
        else:
            wins = [(0, self.size)]
        self.model = Model(self.size, wins)
        self.hist = collections.deque(maxlen=12)
        self.stats = collections.Counter()
        self.lock = threading.Lock()       # stats from threads
        r = random.Random(seed ^ 0x5eed)
        words = [bytes(r.choice(b"etaoinshrdlucmfwypvbgkqjxz") for _ in range(r.randint(1, 9)))
                 for _ in range(400)]
        seps = [b" ", b" ", b" ", b", ", b".\n", b"\t"]
        t = b"".join(r.choice(words) + r.choice(seps) for _ in range(12000))
        self.text = b"".join(t[r.randrange(len(t) // 2):][:len(t) // 2] for _ in range(40))[:MIB]
        self.rand = r.randbytes(MIB)
        self.dbuf = mmap.mmap(-1, 4 * MIB + DPAGE)   # page aligned, for O_DIRECT
        self.limited = False
        self.wb = "backing" in flags
        self.recomp = False
        self.focus = None

    def count(self, key, n=1):
        with self.lock:
            self.stats[key] += n

    # ---------- data ----------
    def pool(self, r, src, n):
        out = bytearray()
        while len(out) < n:
            s = r.randrange(len(src))
            out += src[s:s + n - len(out)]
        return out

    def segment(self, r, kind, pos, n):
        if kind == "text":
            return self.pool(r, self.text, n)
        if kind == "rand":
            return self.pool(r, self.rand, n)
        if kind == "zero":
            return bytearray(n)
        if kind == "byte":
            return bytearray([r.randrange(1, 256)]) * n
        if kind == "old":   # past the end, zeroes
            if pos >= self.size:
                return bytearray(n)
            return bytearray(self.model[pos:min(pos + n, self.model.bounds(pos)[1])]).ljust(n, b"\0")
        word = r.randbytes(8)
        if word == bytes(8):
            word = b"\x01" * 8
        ph = pos % 8
        out = bytearray((word * (n // 8 + 2))[ph:ph + n])
        if kind == "near_same" or kind == "near_zero":
            if kind == "near_zero":
                out = bytearray(n)
            # one byte off, at the words a check may skip: first, second,
            # second last, last, middle, anywhere
            i = min(n - 1, r.choice([n - 1, 0, 8, n - 9, n - 16, n // 2, r.randrange(n)]))
            i = max(i, 0)
            out[i] ^= r.randrange(1, 256)
        return out

    KINDS = ["text"] * 30 + ["rand"] * 14 + ["zero"] * 12 + ["same"] * 12 + \
        ["near_same"] * 5 + ["near_zero"] * 5 + ["byte"] * 5 + ["old"] * 4

    def data(self, r, off, n):
        """n bytes for offset off; the kind changes at device page edges."""
        out = bytearray()
        pos, end = off, off + n
        while pos < end:
            pages = r.choice([1, 1, 1, 2, 3, 8, 16, 64])
            stop = min(end, (pos // DPAGE + pages) * DPAGE)
            out += self.segment(r, r.choice(self.KINDS), pos, stop - pos)
            pos = stop
        return out

    # ---------- offsets and lengths ----------
    def length(self, r, cap=3 * MIB + 12345):
        c = r.random()
        if c < 0.22:
            n = r.randint(1, 700)
        elif c < 0.40:
            n = r.randint(1, 16) * SECTOR
        elif c < 0.58:
            n = r.randint(1, 24) * DPAGE
        elif c < 0.80:
            n = r.randint(1, 140000)
        elif c < 0.95:
            n = r.randint(1, 1100000)
        else:
            n = r.randint(min(MIB, cap), cap)
        return max(1, min(n, cap))

    def place(self, r, cap=3 * MIB + 12345):
        """A length and an offset in one window of the model."""
        base, buf = r.choice(self.model.wins)
        n = self.length(r, min(cap, len(buf)))
        return n, self.offset(r, n, base, base + len(buf))

    def offset(self, r, n, lo, hi):
        """An offset with [off, off + n) inside [lo, hi)."""
        top = hi - n
        if top <= lo:
            return lo
        o = r.randint(lo, top)
        c = r.random()
        if c < 0.25:
            o = o // DPAGE * DPAGE
        elif c < 0.45:
            o = o // SECTOR * SECTOR
        elif c < 0.60:   # just before or after a page, chunk or piece edge
            edge = r.choice([DPAGE, SECTOR, 65536, 32768])
            o = o // edge * edge + r.choice([-1, 1, -r.randint(1, 600), r.randint(1, 600)])
        elif c < 0.65:
            o = top
        return min(max(o, lo), top)

    def note(self, text):
        self.hist.append(text)

    # ---------- checks ----------
    def expect(self, what, off, got, want):
        if got == want:
            return
        i = first_diff(got, want)
        if i >= min(len(got), len(want)):
            raise Fail(f"{what}: {len(got)} bytes read, {len(want)} expected")
        j = i
        while j < min(len(got), len(want)) and got[j] != want[j] and j - i < 1 << 20:
            j += 1
        bad = sum(1 for a, b in zip(got[i:i + 65536], want[i:i + 65536]) if a != b)
        p = off + i
        raise Fail(f"{what}: byte {p} (device page {p // DPAGE} +{p % DPAGE}, sector "
                   f"{p // SECTOR} +{p % SECTOR}) reads {bytes(got[i:i + 8]).hex()} where the "
                   f"model has {bytes(want[i:i + 8]).hex()}; a run of {j - i} wrong bytes "
                   f"from there, {bad} wrong in the 64 KiB from there")

    def pread_all(self, fd, off, n):
        out = bytearray()
        while len(out) < n:
            b = os.pread(fd, n - len(out), off + len(out))
            if not b:
                break
            out += b
        return out

    def verify(self, off, n, what="read"):
        got = self.pread_all(self.fd, off, n)
        self.count("checked", n)
        self.expect(f"{what} of {n} at {off}", off, got, self.model[off:off + n])

    def verify_all(self, what):
        direct = self.r.random() < 0.5
        for base, buf in self.model.wins:
            self.verify_window(what, direct, base, base + len(buf))

    def verify_window(self, what, direct, off, end):
        while off < end:
            n = min(4 * MIB, end - off)
            if direct:
                got = os.preadv(self.dfd, [memoryview(self.dbuf)[:n]], off)
                if got != n:
                    raise Fail(f"{what}: O_DIRECT read of {n} at {off} returned {got}")
                got = self.dbuf[:n]
            else:
                got = self.pread_all(self.fd, off, n)
            self.count("checked", n)
            self.expect(f"{what}: whole disk{' (O_DIRECT)' if direct else ''}, at {off}",
                        off, got, self.model[off:off + n])
            off += n

    def settle(self, what, off, new, err, atomic=True):
        """A write that failed or came back short: each device page it
        touched holds the old bytes or the new, or new then old or old then
        new (the kernel cuts a write into requests where the caller's
        buffer crosses its pages, and a request is all that is atomic,
        page by page); inside one page, the old.  Not atomic (zeroing,
        which zblk does in up to three steps): each byte old or new.  The
        model takes what is there."""
        n = len(new)
        old = self.model[off:off + n]
        got = self.pread_all(self.fd, off, n)
        self.count("checked", n)
        pos, landed = off, 0
        while pos < off + n:
            stop = min(off + n, (pos // DPAGE + 1) * DPAGE)
            g, o, w = got[pos - off:stop - off], old[pos - off:stop - off], new[pos - off:stop - off]
            if g != o and not atomic:
                for x in range(len(g)):
                    if g[x] != o[x] and g[x] != w[x]:
                        self.expect(f"{what} failed ({err}): byte neither old nor new; "
                                    f"against the new bytes", pos + x, g[x:], w[x:])
                landed += g != w
            elif g != o:
                i, j = first_diff(g, w), first_diff(g, o)
                if g != w and g[i:] != o[i:] and g[j:] != w[j:]:
                    self.expect(f"{what} failed ({err}): device page {pos // DPAGE} holds bytes "
                                f"neither old nor new; against the new bytes", pos, g, w)
                landed += 1
            pos = stop
        same_page = off // DPAGE == (off + n - 1) // DPAGE
        if landed and same_page and atomic:
            self.expect(f"{what} failed ({err}) inside one page: the old bytes", off, got, old)
        self.model[off:off + n] = got
        self.count("failed_writes_landed_pages", landed)
        # nothing around it changed
        lo, hi = self.model.bounds(off)
        a = max(lo, off - DPAGE)
        b = min(hi, off + n + DPAGE)
        self.verify(a, off - a, f"{what} failed: the page before")
        self.verify(off + n, b - off - n, f"{what} failed: the page after")

    # ---------- operations ----------
    def write_error_ok(self, e, data, off):
        """Errors a write may give: only at the memory limit, only EIO."""
        if not self.limited or e.errno != errno.EIO:
            return False
        # zeroes need no memory: whole zero pages never fail
        if off % DPAGE == 0 and len(data) % DPAGE == 0 and not any(data):
            raise Fail(f"zeroes ({len(data)} at {off}) refused at the limit: {e.strerror}")
        return True

    def do_write(self, r, fd, off, data, how, bufs=None):
        n = len(data)
        desc = f"{how} write of {n} at {off}"
        self.note(desc)
        try:
            if bufs is not None:
                got = os.pwritev(fd, bufs, off)
            else:
                got = os.pwrite(fd, data, off)
        except OSError as e:
            if not self.write_error_ok(e, data, off):
                raise Fail(f"{desc}: {e.strerror}")
            self.count("failed_writes")
            self.settle(desc, off, data, e.strerror)
            return
        if got != n:
            if not self.limited:
                raise Fail(f"{desc} inside the disk came back short: {got}")
            # the kernel split it: what came back was written
            self.model[off:off + got] = data[:got]
            self.count("short_writes")
            self.settle(desc + f" (short, {got})", off + got, data[got:], "short")
            return
        self.model[off:off + n] = data
        self.count("writes")
        self.count("written", n)
        if r.random() < 0.25:   # at once, to name the write that went wrong
            lo, hi = self.model.bounds(off)
            a, b = max(lo, off - 100), min(hi, off + n + 100)
            self.verify(a, b - a, desc + ", read back with its edges")

    def op_write(self, r):
        n, off = self.place(r)
        self.do_write(r, self.fd, off, self.data(r, off, n), "buffered")

    def op_writev(self, r):
        n, off = self.place(r, MIB)
        data = self.data(r, off, n)
        cuts = sorted(r.sample(range(1, n), min(n - 1, r.randint(1, 5)))) if n > 1 else []
        bufs = [data[a:b] for a, b in zip([0] + cuts, cuts + [n])]
        self.do_write(r, self.fd, off, data, f"pwritev({len(bufs)})", bufs)

    def direct_range(self, r, align):
        n, off = self.place(r, 4 * MIB)
        n = max(align, n // align * align)
        off = off // align * align
        lo, hi = self.model.bounds(off)
        off = min(off, hi - n)
        return off, n

    def op_direct_write(self, r):
        off, n = self.direct_range(r, r.choice([SECTOR, DPAGE]))
        data = self.data(r, off, n)
        self.dbuf[:n] = data
        self.do_write(r, self.dfd, off, data, "O_DIRECT", [memoryview(self.dbuf)[:n]])

    def op_direct_odd(self, r):
        """O_DIRECT at any byte from a buffer at any byte: FUSE takes it,
        cutting requests where the buffer crosses its pages, and sends the
        pieces of one call at once (asynchronous direct I/O)."""
        n, off = self.place(r, 3 * MIB)
        b = r.randrange(DPAGE)
        view = memoryview(self.dbuf)[b:b + n]
        if r.random() < 0.6:
            data = self.data(r, off, n)
            view[:] = data
            self.do_write(r, self.dfd, off, data, f"O_DIRECT (buffer +{b})", [view])
            return
        self.note(f"O_DIRECT read of {n} at {off} into buffer +{b}")
        got = os.preadv(self.dfd, [view], off)
        if got != n:
            raise Fail(f"O_DIRECT read of {n} at {off} returned {got}")
        self.count("checked", n)
        self.expect(f"O_DIRECT read of {n} at {off} into buffer +{b}", off, view.tobytes(),
                    self.model[off:off + n])
        self.count("reads")

    def op_read(self, r):
        n, off = self.place(r)
        self.note(f"read of {n} at {off}")
        self.verify(off, n)
        self.count("reads")

    def op_direct_read(self, r):
        off, n = self.direct_range(r, r.choice([SECTOR, DPAGE]))
        self.note(f"O_DIRECT read of {n} at {off}")
        got = os.preadv(self.dfd, [memoryview(self.dbuf)[:n]], off)
        if got != n:
            raise Fail(f"O_DIRECT read of {n} at {off} returned {got}")
        self.count("checked", n)
        self.expect(f"O_DIRECT read of {n} at {off}", off, self.dbuf[:n],
                    self.model[off:off + n])
        self.count("reads")

    def op_falloc(self, r, mode, name, at=None):
        # at: (bytes done, offset, bytes asked) for a range clipped at the end
        n, off, asked = at if at else self.place(r) + (None,)
        asked = asked or n
        desc = f"fallocate {name} of {asked} at {off}"
        self.note(desc)
        try:
            fallocate(self.fd, mode, off, asked)
        except OSError as e:
            # at the limit, the ragged edges' read-modify-write may fail
            if not self.limited or e.errno != errno.EIO:
                raise Fail(f"{desc}: {e.strerror}")
            if off % DPAGE == 0 and n % DPAGE == 0:
                raise Fail(f"{desc}: whole pages refused at the limit: {e.strerror}")
            self.count("failed_zeroing")
            self.settle(desc, off, bytearray(n), e.strerror, atomic=False)
            return
        self.model[off:off + n] = bytes(n)
        self.count("zeroed", n)
        self.count(name)
        if r.random() < 0.5:
            lo, hi = self.model.bounds(off)
            a = max(lo, off - r.randint(0, 700))
            b = min(hi, off + n + r.randint(0, 700))
            self.verify(a, b - a, desc + ", read back with its edges")

    def op_punch(self, r):
        self.op_falloc(r, PUNCH | KEEP, "punch_hole")

    def op_zero(self, r):
        keep = r.random() < 0.7
        self.op_falloc(r, ZERO | (KEEP if keep else 0), "zero_range" + ("+keep" if keep else ""))

    def refused(self, desc, fn, errs):
        self.note(desc)
        try:
            fn()
        except OSError as e:
            if e.errno not in errs:
                raise Fail(f"{desc}: {e.strerror}, expected {[os.strerror(x) for x in errs]}")
            self.count("refused")
            return
        raise Fail(f"{desc}: succeeded")

    def op_falloc_odd(self, r):
        n, off = self.place(r, 200000)
        c = r.randrange(6)
        if c == 0:   # allocating what exists changes nothing
            mode = r.choice([0, KEEP])
            self.note(f"fallocate mode {mode} of {n} at {off}")
            fallocate(self.fd, mode, off, n)
            self.count("refused")
        elif c == 1:
            self.refused(f"fallocate PUNCH_HOLE without KEEP_SIZE, {n} at {off}",
                         lambda: fallocate(self.fd, PUNCH, off, n), [errno.EOPNOTSUPP, errno.EINVAL])
        elif c == 2:
            m = r.choice([COLLAPSE, INSERT])
            self.refused(f"fallocate mode {m:#x} of {DPAGE} at {off // DPAGE * DPAGE}",
                         lambda: fallocate(self.fd, m, off // DPAGE * DPAGE, DPAGE),
                         [errno.EOPNOTSUPP, errno.EINVAL])
        else:        # past or across the end
            m = r.choice([PUNCH | KEEP, ZERO | KEEP, ZERO, 0])
            o = r.choice([self.size - r.randint(0, n - 1), self.size, self.size + r.randint(0, MIB)])
            if m & KEEP and o < self.size:   # kept size: done up to the end
                return self.op_falloc(r, m, f"mode {m:#x} across the end",
                                      (self.size - o, o, n))
            self.refused(f"fallocate mode {m:#x} of {n} at {o} (end {self.size})",
                         lambda: fallocate(self.fd, m, o, n), [errno.EINVAL, errno.EFBIG])

    def op_past_end(self, r):
        n = self.length(r, 300000)
        c = r.randrange(5)
        if c == 0:   # starts at or past the end: ENOSPC
            off = self.size + r.choice([0, 0, 1, r.randint(0, 5 * MIB)])
            direct = r.random() < 0.3 and off % SECTOR == 0
            if direct:
                n = max(SECTOR, n // SECTOR * SECTOR)
            data = self.data(r, 0, n)
            if direct:
                self.dbuf[:n] = data
            self.refused(f"{'O_DIRECT ' if direct else ''}write of {n} at {off} (end {self.size})",
                         (lambda: os.pwritev(self.dfd, [memoryview(self.dbuf)[:n]], off)) if direct
                         else (lambda: os.pwrite(self.fd, data, off)), [errno.ENOSPC])
        elif c == 1:  # across the end: the bytes inside, cut short
            k = r.randint(1, n) if n > 1 else 1
            off = self.size - k
            data = self.data(r, off, n)
            self.note(f"write of {n} at {off}, {k} inside")
            try:
                got = os.pwrite(self.fd, data, off)
            except OSError as e:
                if not self.write_error_ok(e, data[:k], off):
                    raise
                self.settle(f"write of {n} at {off}", off, data[:k], e.strerror)
                self.count("failed_writes")
                return
            if got != k:
                raise Fail(f"write of {n} at {off} across the end wrote {got}, not {k}")
            self.model[off:] = data[:k]
            self.count("written", k)
        elif c == 2:  # O_DIRECT across the end: short or EIO; the bytes inside land
            k = r.randint(1, max(1, n // SECTOR)) * SECTOR
            n = max(n // SECTOR * SECTOR, k + SECTOR)
            off = self.size - k
            data = self.data(r, off, n)
            self.dbuf[:n] = data
            self.note(f"O_DIRECT write of {n} at {off}, {k} inside")
            try:
                got = os.pwritev(self.dfd, [memoryview(self.dbuf)[:n]], off)
                if got != k:
                    raise Fail(f"O_DIRECT write of {n} at {off} across the end wrote {got}, not {k}")
                self.model[off:] = data[:k]
            except OSError as e:
                # asynchronous direct I/O says EIO, but the bytes inside land
                if e.errno not in (errno.EIO, errno.ENOSPC):
                    raise Fail(f"O_DIRECT write of {n} at {off} across the end: {e.strerror}")
                if self.limited:   # or it failed for want of memory
                    self.settle(f"O_DIRECT write of {n} at {off}", off, data[:k], e.strerror)
                else:
                    self.model[off:] = data[:k]
            self.verify(off - SECTOR, k + SECTOR, "the bytes inside, and a sector before")
        elif c == 3:  # reads at or past the end: nothing; across it: short
            off = self.size + r.choice([0, 1, r.randint(0, MIB)])
            self.note(f"read of {n} at {off}")
            got = os.pread(self.fd, n, off)
            if got:
                raise Fail(f"read of {n} at {off} (end {self.size}) returned {len(got)} bytes")
            k = r.randint(1, n)
            off = self.size - k
            self.note(f"read of {n} at {off}, {k} inside")
            got = self.pread_all(self.fd, off, n)
            self.expect(f"read of {n} at {off} across the end", off, got, self.model[off:])
        else:         # truncation: refused but for the size itself
            new = r.choice([0, self.size // 2, self.size + 1, self.size * 2, self.size - 1])
            self.note(f"ftruncate to {new}")
            if new == 0:
                # atomic O_TRUNC is off: a truncation to 0 arrives and is ignored
                try:
                    os.ftruncate(self.fd, 0)
                except OSError:
                    pass
            else:
                self.refused(f"ftruncate to {new}", lambda: os.ftruncate(self.fd, new),
                             [errno.EINVAL, errno.EPERM, errno.EFBIG])
            os.ftruncate(self.fd, self.size)
            if os.fstat(self.fd).st_size != self.size:
                raise Fail(f"ftruncate to {new}: size now {os.fstat(self.fd).st_size}")
        self.count("past_end")

    def op_sync(self, r):
        self.note("fsync")
        (os.fsync if r.random() < 0.5 else os.fdatasync)(r.choice([self.fd, self.dfd]))
        self.count("syncs")

    def op_seek(self, r):
        _, off = self.place(r, 1)
        self.note(f"SEEK_DATA/SEEK_HOLE at {off}")
        d = os.lseek(self.fd, off, os.SEEK_DATA)
        h = os.lseek(self.fd, off, os.SEEK_HOLE)
        if not off <= d < self.size or not off <= h <= self.size:
            raise Fail(f"lseek at {off}: SEEK_DATA {d}, SEEK_HOLE {h}, size {self.size}")
        if any(self.model[off:d]):
            raise Fail(f"SEEK_DATA at {off} skipped to {d} over data")
        if h < self.size:   # a hole reads as zeroes, up to the next data
            try:
                d2 = os.lseek(self.fd, h, os.SEEK_DATA)
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
                d2 = self.size
            self.verify(h, min(d2 - h, MIB) or 1, f"hole at {h}")
            if any(self.model[h:d2]):
                raise Fail(f"SEEK_HOLE at {off}: {h}..{d2} holds data")
        for whence in (os.SEEK_DATA, os.SEEK_HOLE):
            try:
                x = os.lseek(self.fd, self.size, whence)
                raise Fail(f"lseek({self.size}, {whence}) at the end returned {x}")
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise Fail(f"lseek at the end: {e.strerror}")
        self.count("seeks")

    def op_mmap(self, r):
        n, off = self.place(r, MIB)
        off = off // DPAGE * DPAGE
        self.note(f"private mmap of {n} at {off}")
        m = mmap.mmap(self.fd, n, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ, offset=off)
        try:
            self.count("checked", n)
            self.expect(f"private mmap of {n} at {off}", off, m[:n], self.model[off:off + n])
        finally:
            m.close()
        self.count("mmaps")

    def op_maint(self, r):
        """Work that must not change a byte: compact, recompress, writeback."""
        c = r.randrange(4 if self.wb else 2)
        if c == 0:
            self.note("compact")
            ctl("compact", "1")
        elif c == 1:
            if not self.recomp:
                ctl("recomp_algorithm", "algo=lz4hc priority=1")
                self.recomp = True
            t = r.choice(["threshold=1", "type=huge", "type=idle", "threshold=200", "max_pages=50"])
            self.note(f"recompress {t}")
            try:
                ctl("recompress", t)
            except OSError as e:   # at the limit there may be no room to try
                if not self.limited:
                    raise Fail(f"recompress {t}: {e.strerror}")
        elif c == 2:
            self.note("idle all")
            ctl("idle", r.choice(["all", "1"]))
        else:
            pages = self.size // DPAGE
            a = r.randrange(pages)
            b = min(pages - 1, a + r.randint(0, 300))
            if self.focus and r.random() < 0.7:   # the pages the threads share
                a, b = self.focus
            t = r.choice(["idle", "huge", "huge_idle", "incompressible",
                          f"page_indexes={a}-{b}", f"type=idle page_indexes={a}-{b}",
                          f"page_index={a}", f"type=huge page_indexes={a}-{b} page_index={b}"])
            self.note(f"writeback {t}")
            ctl("writeback", t)
            self.count("writebacks")
        self.count("maint")

    OPS = [("write", 26), ("writev", 4), ("direct_write", 8), ("read", 18), ("direct_read", 6), ("direct_odd", 5),
           ("punch", 7), ("zero", 7), ("falloc_odd", 3), ("past_end", 4), ("sync", 3),
           ("seek", 2), ("mmap", 2), ("maint", 3)]

    # ---------- concurrency ----------
    def threads(self, nthreads, nops, maint, hot):
        """Threads on interleaved byte ranges that share sectors and pages:
        5 MiB of ranges up to 400 KiB, or (hot) a few pages cut in ranges
        of a few hundred bytes, where every write shares a sector with
        another thread's."""
        r = self.r
        lo, buf = r.choice(self.model.wins)
        span = r.choice([700, 1024, 1536, 4608]) if hot else min(5 * MIB, len(buf) // 2)
        base = r.randrange(lo, lo + len(buf) - span - 1000) // SECTOR * SECTOR + r.choice([0, 1, 300])
        end = base + span
        own = [[] for _ in range(nthreads)]
        pos, k = base, 0
        while pos < end:
            w = r.randint(1, 300) if hot else \
                r.choice([r.randint(1, 700), r.randint(1, 9000), r.randint(1, 4) * DPAGE,
                          r.randint(100000, 400000)])
            own[k % nthreads].append((pos, min(end, pos + w)))
            pos += w
            k += 1
        errors = []
        stop = threading.Event()

        def worker(i):
            tr = random.Random(seed * 1000 + i)
            fd = os.open(DISK, os.O_RDWR)
            try:
                for j in range(nops):
                    if errors:
                        return
                    lo, hi = tr.choice(own[i])
                    n = tr.randint(1, hi - lo)
                    off = tr.randint(lo, hi - n)
                    c = tr.random() * (0.85 if hot else 1)
                    if c < 0.5:
                        data = self.pool(tr, self.rand, n) if hot else self.data(tr, off, n)
                        try:
                            got = os.pwrite(fd, data, off)
                            if got != n:
                                raise Fail(f"thread {i}: write of {n} at {off} wrote {got}")
                            self.model[off:off + n] = data
                            if hot and tr.random() < 0.5:
                                self.expect(f"thread {i}: read back of its write of {n} at {off}",
                                            off, self.pread_all(fd, off, n), data)
                        except OSError as e:
                            if not self.write_error_ok(e, data, off):
                                raise Fail(f"thread {i}: write of {n} at {off}: {e.strerror}")
                            # settle() reads only this thread's bytes, and
                            # the pages it checks are checked whole only
                            # where they are this thread's
                            got = self.pread_all(fd, off, n)
                            old = self.model[off:off + n]
                            for x in range(n):
                                if got[x] != old[x] and got[x] != data[x]:
                                    raise Fail(f"thread {i}: failed write of {n} at {off}: "
                                               f"byte {off + x} neither old nor new")
                            self.model[off:off + n] = got
                            self.count("failed_writes")
                        self.count("written", n)
                    elif c < 0.8:
                        got = self.pread_all(fd, off, n)
                        self.count("checked", n)
                        self.expect(f"thread {i}: read of {n} at {off}", off, got,
                                    self.model[off:off + n])
                    else:
                        mode = tr.choice([PUNCH | KEEP, ZERO | KEEP])
                        try:
                            fallocate(fd, mode, off, n)
                            self.model[off:off + n] = bytes(n)
                        except OSError as e:
                            if not self.limited or e.errno != errno.EIO:
                                raise Fail(f"thread {i}: fallocate {mode:#x} of {n} at {off}: "
                                           f"{e.strerror}")
                            self.model[off:off + n] = self.pread_all(fd, off, n)
                    self.count("thread_ops")
            except Exception as e:
                errors.append(f"{type(e).__name__}: {e}" if not isinstance(e, Fail) else str(e))
            finally:
                os.close(fd)

        def maintainer():
            mr = random.Random(seed + 77)
            while not stop.is_set() and not errors:
                try:
                    self.op_maint(mr)
                except Exception as e:
                    errors.append(f"maintenance beside the threads: {e}")
                time.sleep(0.001 if hot else 0.005)

        self.note(f"{nthreads} threads x {nops} ops on {base}..{end}")
        self.focus = (base // DPAGE, (end - 1) // DPAGE)
        ts = [threading.Thread(target=worker, args=(i,)) for i in range(nthreads)]
        if maint:
            ts.append(threading.Thread(target=maintainer))
        for t in ts:
            t.start()
        for t in ts[:nthreads]:
            t.join()
        stop.set()
        for t in ts[nthreads:]:
            t.join()
        self.focus = None
        if errors:
            raise Fail("; ".join(errors))
        self.verify(base, end - base, "after the threads, their whole window")

    # ---------- the run ----------
    def memlimit(self, at):
        # 4 MiB of random bytes over zeroes cannot fit: the write must say
        # so.  Over what it replaces they might (random bytes over random
        # bytes need no more memory), so the range is zeroed first, which
        # frees its objects before the limit is set.
        _, off = self.place(self.r, 1)
        off = min(off, self.model.bounds(off)[1] - 4 * MIB)
        self.do_write(self.r, self.fd, off, bytearray(4 * MIB), "before the limit, zeroes")
        os.fsync(self.fd)
        used = stat_field("mm_stat", 2)
        limit = used + MIB // 2
        self.note(f"mem_limit {limit} (used {used})")
        ctl("mem_limit", str(limit))
        self.limited = True
        before = self.stats["failed_writes"]
        self.do_write(self.r, self.fd, off, self.pool(self.r, self.rand, 4 * MIB), "at the limit")
        if self.stats["failed_writes"] == before:
            raise Fail(f"4 MiB of random bytes went in at a limit {MIB // 2} above what was used")

    def run(self):
        r = self.r
        names = [n for n, w in self.OPS for _ in range(w)]
        if self.wb or "maint" in flags:
            # compaction, recompression (and idle marking and writeback)
            # often, so I/O meets pages they moved
            names += ["maint"] * 12
        self.verify_all("a fresh disk")
        t0 = time.monotonic()
        for i in range(nops):
            if "mem_limit" in flags and i == nops // 4:
                self.memlimit(i)
            if "mem_limit" in flags and i == nops * 3 // 4:
                self.note("mem_limit lifted")
                ctl("mem_limit", "0")
                self.limited = False
                # what failed then goes in now, and stays
                _, off = self.place(r, 1)
                off = min(off, self.model.bounds(off)[1] - 2 * MIB)
                self.do_write(r, self.fd, off, self.pool(r, self.rand, 2 * MIB), "after the limit")
            if i == nops // 2:
                self.threads(3, max(20, nops // 4), True, False)
            if i in (nops // 3, nops * 2 // 3):
                self.threads(3, max(200, 2 * nops), self.wb, True)
            name = r.choice(names)
            try:
                getattr(self, "op_" + name)(r)
            except OSError as e:
                raise Fail(f"{self.hist[-1] if self.hist else name}: {e.strerror} "
                           f"(errno {e.errno})")
            self.count("ops")
            if i % 97 == 96:
                self.verify_all(f"after op {i}")
        self.verify_all("at the end")
        if "mem_limit" in flags and not self.stats["failed_writes"]:
            raise Fail("no write failed at the memory limit: the limit was not reached")
        fr = stat_field("io_stat", 0)
        if fr:
            raise Fail(f"io_stat counts {fr} failed reads")
        if "mem_limit" in flags:
            fw = stat_field("io_stat", 1)
            if not fw:
                raise Fail("writes failed but io_stat's failed_writes is 0")
        if self.wb:
            count, reads, writes = (int(x) for x in ctl("bd_stat").split())
            if not reads or not writes:
                raise Fail(f"bd_stat {count} {reads} {writes}: the backing file was not used")
            self.stats["bd"] = f", bd_stat {count} {reads} {writes}"
        return time.monotonic() - t0

t = Tester()
try:
    secs = t.run()
except Fail as e:
    print(f"FAIL [{config}] seed {seed}: {e}", file=sys.stderr)
    print("  the last operations, oldest first:", file=sys.stderr)
    for h in t.hist:
        print("    " + h, file=sys.stderr)
    sys.exit(1)
s = t.stats
extra = ""
if "mem_limit" in flags:
    extra += (f", {s['failed_writes'] + s['short_writes']} failed writes "
              f"({s['failed_writes_landed_pages']} pages of them landed), "
              f"{s['failed_zeroing']} failed zeroings")
if t.wb:
    extra += f", {s['writebacks']} writeback calls{s['bd']}"
print(f"{config}: {s['ops']} ops + {s['thread_ops']} in threads, {s['written'] / MIB:.0f} MiB "
      f"written, {s['zeroed'] / MIB:.0f} MiB zeroed, {s['checked'] / MIB:.0f} MiB checked, "
      f"{s['refused']} refused as documented{extra}, seed {seed}, {secs:.1f} s")
PY

# run NAME OPTIONS FLAGS: one configuration on a fresh mount.
run() {
	[[ ",$CONFIGS," == *,$1,* ]] || return 0
	zblk_start -o "$2" >/dev/null
	timeout -k 5 300 python3 "$PY" "$MNT" "$1" "$SEED" "$OPS" "${3:-}" ||
		fail "[$1] seed $SEED: see above (ZBLK_MODEL_SEED=$SEED ZBLK_MODEL_CONFIGS=$1 replays it)"
	zblk_stop "$1"
}

run default "disksize=$SIZE"
run multi_page "disksize=$SIZE,multi_page" maint
run page_cache "disksize=$SIZE,page_cache"
run mem_limit "disksize=$SIZE" mem_limit
# 3 TiB, sparse: byte offsets past 2^32 and sector numbers past 2^32
# A pool holds fewer pages the larger they are (262,143 of 64 KiB, 16 GiB,
# a stripe): with pages over 4 KiB the far disk is 15 GiB a stripe, past
# byte 2^32 but not sector 2^32.
FAR=3T
[ "${PAGE_SIZE:-4096}" -le 4096 ] || FAR=$((15 * ${STRIPES:-1}))G
run far "disksize=$FAR" far
if [ "$STRIPES" = 1 ]; then
	run backing "disksize=$SIZE,backing_dev=$WORK/backing" backing
else
	echo "backing: skipped (backing_dev needs stripes=1)"
fi
# FUSE over io_uring, as fuse_uring.sh turns it on, and back after.
if [[ ",$CONFIGS," == *,io_uring,* ]]; then
	why=
	[ -e "$PARAM" ] || why="this kernel has no FUSE over io_uring"
	[ -z "$why" ] && [ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" != 0 ] &&
		why="io_uring is disabled (kernel.io_uring_disabled)"
	[ -z "$why" ] && [[ $("$ZBLK" -h 2>/dev/null || true) != *io_uring* ]] &&
		why="zblk built without liburing"
	if [ -z "$why" ]; then
		old=$(cat "$PARAM")
		echo Y 2>/dev/null >"$PARAM" || why="cannot set $PARAM"
	fi
	if [ -n "$why" ]; then
		echo "io_uring: skipped ($why)"
	else
		trap 'st=$?; echo "$old" >"$PARAM"; (exit $st); cleanup' EXIT
		ZBLK_OPTS="${ZBLK_OPTS:+$ZBLK_OPTS,}io_uring" run io_uring "disksize=$SIZE"
		echo "$old" >"$PARAM"
		trap cleanup EXIT
	fi
fi
echo "1 passed, 0 failed"
