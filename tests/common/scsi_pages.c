/* SPDX-License-Identifier: Apache-2.0 */
/* VPD 83h designators and RTPG descriptors from the raw bytes (scsi_pages.h). */
#include "scsi_pages.h"

uint32_t vpd_page_len(const unsigned char *d, int size)
{
	uint32_t n = size >= 4 ? 4u + be16(&d[2]) : 0;

	return n < 4 || n > (uint32_t)size ? 0 : n;
}

int vpd83_next(const unsigned char *d, uint32_t n, uint32_t *off, const unsigned char **e)
{
	if (*off + 4 > n)
		return 0;
	*e = &d[*off];
	if (*off + 4 + (*e)[3] > n)
		return -1;
	*off += 4u + (*e)[3];
	return 1;
}

uint32_t rtpg_len(const unsigned char *d, int size)
{
	uint32_t n = size >= 8 ? 4 + be32(d) : 0;

	return n < 8 || n > (uint32_t)size ? 0 : n;
}

int rtpg_next(const unsigned char *d, uint32_t n, uint32_t *off, const unsigned char **g)
{
	if (*off + 8 > n)
		return 0;
	*g = &d[*off];
	if (*off + 8 + 4u * (*g)[7] > n)
		return -1;
	*off += 8 + 4u * (*g)[7];
	return 1;
}
