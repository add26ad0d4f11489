/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bench clients' common start (qd1_latency, seq_read): one libiscsi
 * session to an iscsi:// URL and the LUN's geometry.
 */
#ifndef ISERGW_BENCH_LOGIN_H
#define ISERGW_BENCH_LOGIN_H

#include <stdint.h>
#include <stdio.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

struct bench_lun {
	struct iscsi_context *ctx;
	struct iscsi_url *url;
	int lun;
	uint32_t block_size;
	uint64_t blocks;
};

/*
 * Log in as initiator to url_str (a normal session, no digests) and read
 * the LUN's capacity. Returns 0, or 1 after a line on stderr naming prog.
 */
static inline int bench_login(const char *prog, const char *initiator, const char *url_str,
			      struct bench_lun *b)
{
	struct scsi_readcapacity16 *rc16;
	struct scsi_task *t;

	b->ctx = iscsi_create_context(initiator);
	if (!b->ctx) {
		fprintf(stderr, "%s: no libiscsi context\n", prog);
		return 1;
	}
	b->url = iscsi_parse_full_url(b->ctx, url_str);
	if (!b->url) {
		fprintf(stderr, "%s: %s\n", prog, iscsi_get_error(b->ctx));
		return 1;
	}
	iscsi_set_session_type(b->ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(b->ctx, ISCSI_HEADER_DIGEST_NONE);
	if (iscsi_full_connect_sync(b->ctx, b->url->portal, b->url->lun) != 0) {
		fprintf(stderr, "%s: login to %s: %s\n", prog, url_str, iscsi_get_error(b->ctx));
		return 1;
	}
	t = iscsi_readcapacity16_sync(b->ctx, b->url->lun);
	rc16 = t && t->status == SCSI_STATUS_GOOD ? scsi_datain_unmarshall(t) : NULL;
	if (!rc16 || rc16->block_length == 0) {
		fprintf(stderr, "%s: READ CAPACITY(16) failed\n", prog);
		if (t)
			scsi_free_scsi_task(t);
		return 1;
	}
	b->lun = b->url->lun;
	b->block_size = rc16->block_length;
	b->blocks = rc16->returned_lba + 1;
	scsi_free_scsi_task(t);
	return 0;
}

/* Log out and free what bench_login made. */
static inline void bench_logout(struct bench_lun *b)
{
	iscsi_logout_sync(b->ctx);
	iscsi_destroy_url(b->url);
	iscsi_destroy_context(b->ctx);
}

#endif
