/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What fuzz_login and fuzz_chap share (fake_login.c): the random source at
 * the edge, made deterministic per input, and what an initiator does with
 * a text answer (look a key up, encode a CHAP value in base64).
 */
#ifndef ISERGW_FUZZ_FAKE_LOGIN_H
#define ISERGW_FUZZ_FAKE_LOGIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * getrandom(2) is replaced in the fuzz targets that link fake_login.c: the
 * CHAP challenges (chap.c) come from a generator reset here, so that every
 * execution of one input sees the same challenges.
 */
void fake_random_reset(uint64_t seed);
ssize_t getrandom(void *buf, size_t len, unsigned int flags);

/* "0b" + base64 of in[n] (RFC 4648, '=' padding unless nopad) into out; 0 or -E2BIG. */
int fake_encode_base64(const uint8_t *in, size_t n, char *out, size_t outsz, int nopad);

/*
 * The value of key in NUL-separated key=value text (the first occurrence),
 * NULL when absent; *count (if given) how many times the key appears.
 */
const char *fake_text_value(const char *text, size_t len, const char *key, unsigned int *count);

/*
 * Abort unless text[len] is well formed as a complete answer: it ends with a
 * NUL, every entry is key=value with a non-empty key, and no key appears twice
 * except those listed in repeatable (NULL-terminated; may be NULL).
 */
void fake_check_text(const char *text, size_t len, const char *const *repeatable);

#endif
