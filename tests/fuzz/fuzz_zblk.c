// SPDX-License-Identifier: MIT
/*
 * Fuzz target: zblk's text parsers (tools/zblk/parse.c), which read every
 * mount option value and every control-file write (mem_limit, idle, and the
 * key=value lines of writeback, recompress and the like).  The first byte
 * picks the parser and its arguments; the rest is the text.
 *
 * The oracles are independent of the parsers' arithmetic.  For numbers: the
 * text is well formed exactly when it is digits and an optional unit; a
 * well-formed number is in range exactly when its digits, compared as a
 * decimal string, do not exceed max >> shift printed in decimal; in range it
 * must equal strtoull() of the digits shifted.  For key=value lines: the
 * words are found again by a separate split, and each key and value must
 * join back into its word.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "parse.h"

#define fail(...) (fprintf(stderr, __VA_ARGS__), abort())

static const char *strip_zeros(const char *digits, size_t *len)
{
	while (*len > 1 && *digits == '0') {
		digits++;
		(*len)--;
	}
	return digits;
}

static void check_number(const char *s, bool suffix, uint64_t max)
{
	size_t nd = strspn(s, "0123456789"), rest = strlen(s + nd), len = nd;
	const char *u = nd && rest == 1 && suffix ? strchr("kKmMgGtT", s[nd]) : NULL;
	bool well_formed = nd && (rest == 0 || (u && *u));
	unsigned int shift = u && *u ? 10u * (unsigned int)((strchr("kmgt", *u | 0x20) - "kmgt") + 1) : 0;
	uint64_t out = 0xdeadbeef;
	int ret = zblk_parse_number(s, suffix, max, &out);
	char lim[32], digits[64];
	const char *d;
	bool in_range;

	if (!well_formed) {
		if (ret != -EINVAL)
			fail("'%s' suffix %d: want -EINVAL, got %d\n", s, suffix, ret);
		return;
	}
	snprintf(lim, sizeof(lim), "%" PRIu64, max >> shift);
	d = strip_zeros(s, &len);
	in_range = len < strlen(lim) || (len == strlen(lim) && memcmp(d, lim, len) <= 0);
	if (!in_range) {
		if (ret != -ERANGE)
			fail("'%s' max %" PRIu64 ": want -ERANGE, got %d\n", s, max, ret);
		if (out != 0xdeadbeef)
			fail("'%s': out written on failure\n", s);
		return;
	}
	if (ret)
		fail("'%s' max %" PRIu64 ": want 0, got %d\n", s, max, ret);
	snprintf(digits, sizeof(digits), "%.*s", (int)len, d);
	if (out != (uint64_t)strtoull(digits, NULL, 10) << shift)
		fail("'%s': got %" PRIu64 "\n", s, out);
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

static void check_kv(char *line, size_t max)
{
	char copy[512], *words[512];
	struct zblk_kv kv[8];
	size_t n = 0, i;
	bool bad = false;
	int ret;
	char *p;

	snprintf(copy, sizeof(copy), "%s", line);
	for (p = copy; *p;) {
		while (blank(*p))
			p++;
		if (!*p)
			break;
		words[n++] = p;
		while (*p && !blank(*p))
			p++;
		if (*p)
			*p++ = 0;
	}
	/* Only the words the parser reaches before giving up are judged. */
	for (i = 0; i < n && i < max + 1 && !bad; i++) {
		char *eq = strchr(words[i], '=');

		bad = i < max && (eq == words[i] || (eq && !eq[1]));
	}
	ret = zblk_parse_kv(line, kv, max);
	if (!n || bad) {
		if (ret != -EINVAL)
			fail("want -EINVAL, got %d\n", ret);
		return;
	}
	if (n > max) {
		if (ret != -E2BIG)
			fail("%zu words, max %zu: want -E2BIG, got %d\n", n, max, ret);
		return;
	}
	if (ret != (int)n)
		fail("want %zu words, got %d\n", n, ret);
	for (i = 0; i < n; i++) {
		char joined[512];

		if (strchr(kv[i].key, '=') || !*kv[i].key)
			fail("word %zu: bad key '%s'\n", i, kv[i].key);
		snprintf(joined, sizeof(joined), "%s%s%s", kv[i].key, kv[i].value ? "=" : "",
			 kv[i].value ? kv[i].value : "");
		if (strcmp(joined, words[i]))
			fail("word %zu: '%s' is not '%s'\n", i, joined, words[i]);
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct input in = { data, size };
	unsigned int mode = take(&in, 1);
	char text[256];
	size_t len = in.left < sizeof(text) - 1 ? in.left : sizeof(text) - 1;

	if (mode & 0x80) {
		uint64_t max = (uint64_t)take(&in, 4) << 32;

		max |= take(&in, 4);
		len = in.left < sizeof(text) - 1 ? in.left : sizeof(text) - 1;
		memcpy(text, in.p, len);
		text[len] = 0;
		/* Half the time a limit zblk really uses: off_t, 16 stripes, u32. */
		if (mode & 0x40)
			max = (mode & 3) == 0 ? (uint64_t)INT64_MAX :
			      (mode & 3) == 1 ? 16 : (mode & 3) == 2 ? UINT32_MAX : UINT64_MAX;
		check_number(text, mode & 0x20, max);
	} else {
		memcpy(text, in.p, len);
		text[len] = 0;
		check_kv(text, (mode & 7) + 1);
	}
	return 0;
}
