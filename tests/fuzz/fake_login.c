/* SPDX-License-Identifier: Apache-2.0 */
/* The random source and the initiator-side text helpers of fuzz_login and fuzz_chap. */
#include "fake_login.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rnd_state = 1;

void fake_random_reset(uint64_t seed)
{
	rnd_state = seed * 0x9e3779b97f4a7c15ull + 1;
}

/* Overrides the C library's: chap.c's challenges become a function of the input. */
ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	uint8_t *p = buf;

	(void)flags;
	for (size_t i = 0; i < len; i++) {
		/* xorshift64* */
		rnd_state ^= rnd_state >> 12;
		rnd_state ^= rnd_state << 25;
		rnd_state ^= rnd_state >> 27;
		p[i] = (uint8_t)((rnd_state * 0x2545f4914f6cdd1dull) >> 56);
	}
	return (ssize_t)len;
}

int fake_encode_base64(const uint8_t *in, size_t n, char *out, size_t outsz, int nopad)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0, i;

	if (outsz < 2 + 4 * ((n + 2) / 3) + 1)
		return -E2BIG;
	out[o++] = '0';
	out[o++] = 'b';
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];

		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = tab[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);

		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		if (i + 1 < n)
			out[o++] = tab[(v >> 6) & 63];
		else if (!nopad)
			out[o++] = '=';
		if (!nopad)
			out[o++] = '=';
	}
	out[o] = '\0';
	return 0;
}

const char *fake_text_value(const char *text, size_t len, const char *key, unsigned int *count)
{
	size_t kl = strlen(key), off = 0;
	const char *found = NULL;
	unsigned int n = 0;

	while (off < len) {
		const char *e = text + off;
		size_t l = strnlen(e, len - off);

		if (l > kl && memcmp(e, key, kl) == 0 && e[kl] == '=') {
			if (!found)
				found = e + kl + 1;
			n++;
		}
		off += l + 1;
	}
	if (count)
		*count = n;
	return found;
}

void fake_check_text(const char *text, size_t len, const char *const *repeatable)
{
	size_t off = 0;

	if (len == 0)
		return;
	if (text[len - 1] != '\0')
		abort();
	while (off < len) {
		const char *e = text + off;
		size_t l = strlen(e);
		const char *eq = memchr(e, '=', l);
		char key[256];
		unsigned int n;
		bool rep = false;

		if (!eq || eq == e || (size_t)(eq - e) >= sizeof(key))
			abort();
		memcpy(key, e, (size_t)(eq - e));
		key[eq - e] = '\0';
		for (size_t i = 0; repeatable && repeatable[i]; i++)
			rep |= strcmp(repeatable[i], key) == 0;
		if (!rep) {
			(void)fake_text_value(text, len, key, &n);
			if (n != 1)
				abort();
		}
		off += l + 1;
	}
}
