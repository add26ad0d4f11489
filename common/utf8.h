/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Strict UTF-8 (RFC 3629), one sequence at a time: what the configuration's
 * validators (config/names.c) and the log (log.c, which escapes what is not)
 * read text with.
 */
#ifndef ISERGW_UTF8_H
#define ISERGW_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * The length of the strict UTF-8 sequence at s[i] (i < len), its code point
 * in *cp; 0 when the bytes there are not one (no overlong forms, no
 * surrogates, nothing above U+10FFFF, no truncated sequence).
 */
size_t gw_utf8_next(const unsigned char *s, size_t len, size_t i, uint32_t *cp);

#endif
