/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A LUN grown under a live session (docs/control.md, ApplyConfig; a reload
 * raising a LUN's size), as a host sees it (libiscsi, synchronous API):
 *
 *   grow_probe iscsi://[USER%SECRET@]HOST:PORT/IQN/LUN [INITIATOR]
 *
 * Logs in, clears the unit attentions of a fresh nexus with TEST UNIT READY,
 * prints "capacity N" (READ CAPACITY(16): the number of blocks) and "ready",
 * then waits for a line on stdin. Then, on the same session: TEST UNIT READY
 * and prints "ua KK/AA/QQ" (hex) for a CHECK CONDITION or "good"; READ
 * CAPACITY(16) again, "capacity N"; a WRITE(16) and a READ(16) of the last
 * block, "last block ok"; and "session kept". Automatic reconnection is off:
 * a session the target dropped fails the next command. Exit 1 on an error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

static int capacity(struct iscsi_context *iscsi, int lun, uint64_t *blocks, uint32_t *bs)
{
	struct scsi_task *t = iscsi_readcapacity16_sync(iscsi, lun);
	struct scsi_readcapacity16 *rc;

	if (!t || t->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "READ CAPACITY(16) failed: %s\n", iscsi_get_error(iscsi));
		if (t)
			scsi_free_scsi_task(t);
		return -1;
	}
	rc = scsi_datain_unmarshall(t);
	if (!rc) {
		scsi_free_scsi_task(t);
		return -1;
	}
	*blocks = rc->returned_lba + 1;
	*bs = rc->block_length;
	scsi_free_scsi_task(t);
	return 0;
}

int main(int argc, char **argv)
{
	struct iscsi_context *iscsi;
	struct iscsi_url *url;
	struct scsi_task *t;
	uint64_t blocks;
	uint32_t bs;
	unsigned char *buf;
	char line[64];
	int lun, i;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: grow_probe iscsi://[USER%%SECRET@]HOST:PORT/IQN/LUN "
			"[INITIATOR]\n");
		return 2;
	}
	iscsi = iscsi_create_context(argc == 3 ? argv[2] : "iqn.2026-11.org.isergw:grow-probe");
	if (!iscsi)
		return 1;
	url = iscsi_parse_full_url(iscsi, argv[1]);
	if (!url) {
		fprintf(stderr, "bad URL: %s\n", iscsi_get_error(iscsi));
		return 1;
	}
	iscsi_set_targetname(iscsi, url->target);
	if (url->user[0] && iscsi_set_initiator_username_pwd(iscsi, url->user, url->passwd)) {
		fprintf(stderr, "CHAP: %s\n", iscsi_get_error(iscsi));
		return 1;
	}
	iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(iscsi, ISCSI_HEADER_DIGEST_NONE);
	lun = url->lun;
	if (iscsi_full_connect_sync(iscsi, url->portal, lun)) {
		fprintf(stderr, "login failed: %s\n", iscsi_get_error(iscsi));
		return 1;
	}
	iscsi_set_noautoreconnect(iscsi, 1);
	/* the unit attentions of a fresh nexus (power on, reset) */
	for (i = 0; i < 8; i++) {
		t = iscsi_testunitready_sync(iscsi, lun);
		if (t && t->status == SCSI_STATUS_GOOD) {
			scsi_free_scsi_task(t);
			break;
		}
		if (t)
			scsi_free_scsi_task(t);
	}
	if (capacity(iscsi, lun, &blocks, &bs))
		return 1;
	printf("capacity %" PRIu64 "\nready\n", blocks);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	t = iscsi_testunitready_sync(iscsi, lun);
	if (!t) {
		fprintf(stderr, "TEST UNIT READY failed: %s\n", iscsi_get_error(iscsi));
		return 1;
	}
	if (t->status == SCSI_STATUS_CHECK_CONDITION)
		printf("ua %02x/%02x/%02x\n", (unsigned int)t->sense.key,
		       (unsigned int)(t->sense.ascq >> 8), (unsigned int)(t->sense.ascq & 0xff));
	else
		printf("%s\n", t->status == SCSI_STATUS_GOOD ? "good" : "other");
	scsi_free_scsi_task(t);
	if (capacity(iscsi, lun, &blocks, &bs))
		return 1;
	printf("capacity %" PRIu64 "\n", blocks);

	buf = calloc(1, bs);
	if (!buf)
		return 1;
	memset(buf, 0x5a, bs);
	t = iscsi_write16_sync(iscsi, lun, blocks - 1, buf, bs, bs, 0, 0, 0, 0, 0);
	if (!t || t->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "WRITE(16) of the last block failed: %s\n", iscsi_get_error(iscsi));
		return 1;
	}
	scsi_free_scsi_task(t);
	t = iscsi_read16_sync(iscsi, lun, blocks - 1, bs, bs, 0, 0, 0, 0, 0);
	if (!t || t->status != SCSI_STATUS_GOOD || t->datain.size != (int)bs ||
	    memcmp(t->datain.data, buf, bs)) {
		fprintf(stderr, "READ(16) of the last block failed or differs\n");
		return 1;
	}
	scsi_free_scsi_task(t);
	printf("last block ok\n");
	free(buf);
	printf("session kept\n");
	iscsi_logout_sync(iscsi);
	iscsi_destroy_url(url);
	iscsi_destroy_context(iscsi);
	return 0;
}
