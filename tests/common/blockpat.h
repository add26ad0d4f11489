/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The seeded block pattern of the clients that write data and check it
 * back: integrity (tests/integration/integrity.c) and ha_io
 * (tests/ha/ha_io.c). Every logical block starts with a header of 64-bit
 * words in host byte order: the client's magic, the seed, the LBA and, for a
 * client that writes a block more than once, the number of the write that
 * left it; the rest of the block is a splitmix64 stream seeded from (seed,
 * LBA, write number). So the content is a function of those alone, and a
 * block found in the wrong place, of another run or of an older write says
 * which one it is.
 */
#ifndef ISERGW_TESTS_BLOCKPAT_H
#define ISERGW_TESTS_BLOCKPAT_H

#include <stdbool.h>
#include <stdint.h>

/* A client's pattern. */
struct blockpat {
	uint64_t magic;         /* the header's first word: whose block it is */
	uint64_t seed;
	bool numbered;          /* the header carries a write number (4 words, else 3) */
};

/* What a block's header says. */
struct blockpat_hdr {
	uint64_t seed, lba;
	uint64_t write;         /* 0 unless numbered */
};

/* The next number of a splitmix64 generator (Steele, Lea, Flood 2014). */
uint64_t splitmix64(uint64_t *state);

/* n blocks of bs bytes from lba on, as write number `write` left them (0 unless numbered). */
void blockpat_fill(const struct blockpat *bp, unsigned char *p, uint32_t bs, uint64_t lba,
		   uint64_t n, uint64_t write);

/* Whether p starts with bp's header (its magic); *h what that header says. */
bool blockpat_header(const struct blockpat *bp, const unsigned char *p, struct blockpat_hdr *h);

#endif
