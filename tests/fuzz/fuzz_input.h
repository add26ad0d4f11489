/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The input cursor the connection targets (fuzz_pdu, fuzz_iser) read their
 * records with: take() copies up to n bytes and zero-fills what the input
 * no longer has, so a record cut short still decodes.
 */
#ifndef ISERGW_FUZZ_INPUT_H
#define ISERGW_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct input {
	const uint8_t *p;
	size_t left;
};

static inline size_t take(struct input *in, void *out, size_t n)
{
	size_t k = n < in->left ? n : in->left;

	if (k)
		memcpy(out, in->p, k);
	if (k < n)
		memset((uint8_t *)out + k, 0, n - k);
	in->p += k;
	in->left -= k;
	return k;
}

#endif
