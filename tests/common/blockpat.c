/* SPDX-License-Identifier: Apache-2.0 */
/* The seeded block pattern of the data-checking clients (blockpat.h). */
#include <string.h>

#include "blockpat.h"

uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void fill_block(const struct blockpat *bp, unsigned char *p, uint32_t bs, uint64_t lba,
		       uint64_t write)
{
	uint64_t s = bp->seed ^ (lba * 0xd1342543de82ef95ull) ^ (write * 0x9e3779b97f4a7c15ull);
	uint32_t i = 24;

	put64(p, bp->magic);
	put64(p + 8, bp->seed);
	put64(p + 16, lba);
	if (bp->numbered) {
		put64(p + 24, write);
		i = 32;
	}
	for (; i + 8 <= bs; i += 8)
		put64(p + i, splitmix64(&s));
}

void blockpat_fill(const struct blockpat *bp, unsigned char *p, uint32_t bs, uint64_t lba,
		   uint64_t n, uint64_t write)
{
	for (uint64_t i = 0; i < n; i++)
		fill_block(bp, p + i * bs, bs, lba + i, write);
}

bool blockpat_header(const struct blockpat *bp, const unsigned char *p, struct blockpat_hdr *h)
{
	h->seed = get64(p + 8);
	h->lba = get64(p + 16);
	h->write = bp->numbered ? get64(p + 24) : 0;
	return get64(p) == bp->magic;
}
