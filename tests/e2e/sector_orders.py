# SPDX-License-Identifier: MIT
"""What racing pairs of writes left in a run of sectors (rmw_race.sh,
nbd_rmw_race.sh).  Pair i wrote sector i twice at once: 512 bytes of 0xAA
(aligned), and 10 bytes of 0xBB at byte 100 (a read-modify-write).  Each
sector must hold one order or the other; anything else, zeroes around the
0xBB bytes above all, is the aligned write undone by the read-modify-write's
write back of the old bytes."""

SECTOR = 512
ALIGNED_FIRST = b"\xaa" * 100 + b"\xbb" * 10 + b"\xaa" * (SECTOR - 110)
PARTIAL_FIRST = b"\xaa" * SECTOR


def check(got, pairs):
    """Prints the orders seen; False, with a FAIL line, if a sector is in neither."""
    orders, lost = [0, 0], []
    for i in range(pairs):
        s = got[i * SECTOR:(i + 1) * SECTOR]
        if s == ALIGNED_FIRST:
            orders[0] += 1
        elif s == PARTIAL_FIRST:
            orders[1] += 1
        else:
            lost.append(i)
    print(f"{pairs} racing pairs: {orders[0]} aligned first, {orders[1]} partial first, "
          f"{len(lost)} neither")
    if lost:
        s = got[lost[0] * SECTOR:(lost[0] + 1) * SECTOR]
        print(f"FAIL {len(lost)} sectors in an order no writer made; sector {lost[0]} "
              f"holds {s[96:112].hex()} at byte 96")
    return not lost
