/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SCSI data that the libiscsi test clients parse from the raw bytes (not by
 * libiscsi), every length checked against what was returned: the designators
 * of VPD page 83h and the descriptors of REPORT TARGET PORT GROUPS. Used by
 * cluster_probe (tests/integration/cluster_probe.c) and ha_io's sampler
 * (tests/ha/ha_io.c).
 */
#ifndef ISERGW_TESTS_SCSI_PAGES_H
#define ISERGW_TESTS_SCSI_PAGES_H

#include <stdint.h>

static inline uint16_t be16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A VPD page's length (4 + PAGE LENGTH), or 0 when the size bytes returned do not hold it. */
uint32_t vpd_page_len(const unsigned char *d, int size);

/*
 * The designator of a VPD 83h page of length n (vpd_page_len) at *off
 * (start at 4): 1 with *e pointing to it and *off past it, 0 after the last
 * one, -1 when it overruns the page.
 */
int vpd83_next(const unsigned char *d, uint32_t n, uint32_t *off, const unsigned char **e);

/*
 * REPORT TARGET PORT GROUPS data's length (4 + RETURN DATA LENGTH), or 0 when
 * the size bytes returned do not hold its header and it.
 */
uint32_t rtpg_len(const unsigned char *d, int size);

/*
 * The target port group descriptor of RTPG data of length n (rtpg_len) at
 * *off (start at 8, after the extended header): 1 with *g pointing to it
 * and *off past it (and its target port descriptors), 0 when no further
 * descriptor fits (*off is n unless bytes were left over), -1 when it
 * overruns the data.
 */
int rtpg_next(const unsigned char *d, uint32_t n, uint32_t *off, const unsigned char **g);

#endif
