/* SPDX-License-Identifier: MIT */
/*
 * zblk's text parsers: every number and every "key=value ..." line zblk
 * reads, from mount options and control files alike.  Kept apart from the
 * FUSE code so that tests/fuzz/fuzz_zblk.c can drive them directly.
 */
#ifndef ZBLK_PARSE_H
#define ZBLK_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * zblk_parse_number() - parse a decimal number, with or without a unit
 * @s: the text: decimal digits, then with @suffix one of K, M, G, T
 *	(either case, binary multiples); nothing else, no sign, no space
 * @suffix: accept a unit letter
 * @max: the largest value accepted, after the unit is applied
 * @out: the value, written only on success
 *
 * Return: 0; -EINVAL when @s is malformed; -ERANGE when the value exceeds
 * @max (a value too large for 64 bits is -ERANGE too, never wrapped).
 */
int zblk_parse_number(const char *s, bool suffix, uint64_t max, uint64_t *out);

/**
 * struct zblk_kv - one "key=value" word of a control-file line
 * @key: the word before '=', or the whole word when it has none
 * @value: the text after the first '=', or NULL when there is none
 */
struct zblk_kv {
	char *key;
	char *value;
};

/**
 * zblk_parse_kv() - split a control-file line into key=value words
 * @line: the text, modified in place (NUL written after each key and value)
 * @kv: array to fill
 * @max: entries in @kv
 *
 * Words are separated by spaces, tabs and newlines, as Linux's zram
 * attributes take them ("type=idle max_pages=100").
 *
 * Return: the number of words; -EINVAL for an empty line, an empty key
 * ("=x") or an empty value ("k="); -E2BIG for more than @max words.
 */
int zblk_parse_kv(char *line, struct zblk_kv *kv, size_t max);

#endif
