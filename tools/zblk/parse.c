// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "parse.h"

/*
 * strtoull() is not used: it accepts signs and leading spaces and saturates
 * silently, and a size option that wrapped would make a small disk.
 */
int zblk_parse_number(const char *s, bool suffix, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	bool wrapped = false;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			wrapped = true;
		v = v * 10 + d;
	}
	if (suffix && *s) {
		const char *units = "kmgt", *u = strchr(units, *s | 0x20);

		if (!u || !*u)
			return -EINVAL;
		shift = 10 * (unsigned int)(u - units + 1);
		s++;
	}
	/* Malformed text is "bad", however many digits it starts with. */
	if (*s)
		return -EINVAL;
	if (wrapped || v > max >> shift)
		return -ERANGE;
	*out = v << shift;
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

int zblk_parse_kv(char *line, struct zblk_kv *kv, size_t max)
{
	size_t n = 0;
	char *p = line;

	for (;;) {
		char *word, *eq;

		while (is_space(*p))
			p++;
		if (!*p)
			break;
		word = p;
		while (*p && !is_space(*p))
			p++;
		if (*p)
			*p++ = 0;
		if (n == max)
			return -E2BIG;
		eq = strchr(word, '=');
		if (eq == word || (eq && !eq[1]))
			return -EINVAL;
		if (eq)
			*eq = 0;
		kv[n].key = word;
		kv[n].value = eq ? eq + 1 : NULL;
		n++;
	}
	return n ? (int)n : -EINVAL;
}
