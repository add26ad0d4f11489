/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A libiscsi initiator for the control socket test (ctl.sh).
 *
 *   ctl_client --url iscsi://HOST:PORT/IQN/LUN --initiator IQN --mode MODE
 *              [--reads N] [--writes N] [--luns N]
 *
 * count: clears unit attentions with TEST UNIT READY, then sends exactly
 *        N READ(10) and M WRITE(10) of 4 KiB, each of which must end GOOD;
 *        prints "count: reads N writes M bytes 4096".
 * hold:  prints "hold: logged in", then reads one block every 20 ms until
 *        SIGTERM (prints "hold: N commands, E errors", exit 0 when E is 0)
 *        or until the target drops the connection (prints
 *        "hold: connection lost after N commands", exit 3).
 * alua:  REPORT TARGET PORT GROUPS (prints "alua: tpg T state S" per group),
 *        then one READ(10), unit attentions skipped (prints "read: GOOD" or
 *        "read: CHECK CONDITION KEY/ASC/ASCQ" in hex).
 * luns:  LUNs 0..N-1 of the target one after the other: unit attentions
 *        cleared, then one READ(10) of a block that must end GOOD; prints
 *        "luns: N read" (tests/bench/metrics_scale.sh: every LUN had I/O).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define XFER 4096u

/*
 * hold mode ends on SIGTERM or SIGINT. Both stay blocked and are taken with
 * sigtimedwait() between commands: a handler run asynchronously could
 * interrupt free() inside a sanitizer's runtime (ThreadSanitizer's can fail
 * its own checks then and exit 66), and libiscsi's waits never see EINTR.
 */
static sigset_t term_set;

static void usage(void) __attribute__((noreturn));

static void usage(void)
{
	fprintf(stderr, "usage: ctl_client --url URL --initiator IQN --mode count|hold|alua|luns "
		"[--reads N] [--writes N] [--luns N]\n");
	exit(2);
}

static bool is_ua(const struct scsi_task *t)
{
	return t && t->status == SCSI_STATUS_CHECK_CONDITION &&
	       t->sense.key == SCSI_SENSE_UNIT_ATTENTION;
}

/* TEST UNIT READY until no unit attention is pending (at most 16). */
static int clear_ua(struct iscsi_context *iscsi, int lun)
{
	for (int i = 0; i < 16; i++) {
		struct scsi_task *t = iscsi_testunitready_sync(iscsi, lun);
		bool ua = is_ua(t);

		if (!t)
			return -1;
		scsi_free_scsi_task(t);
		if (!ua)
			return 0;
	}
	return -1;
}

static int mode_count(struct iscsi_context *iscsi, int lun, unsigned int reads,
		      unsigned int writes)
{
	static unsigned char buf[XFER];

	if (clear_ua(iscsi, lun)) {
		fprintf(stderr, "count: TEST UNIT READY failed: %s\n", iscsi_get_error(iscsi));
		return 1;
	}
	for (unsigned int i = 0; i < reads; i++) {
		struct scsi_task *t = iscsi_read10_sync(iscsi, lun, i * 8u, XFER, 512, 0, 0, 0, 0, 0);

		if (!t || t->status != SCSI_STATUS_GOOD) {
			fprintf(stderr, "count: READ(10) %u failed: %s\n", i, iscsi_get_error(iscsi));
			return 1;
		}
		scsi_free_scsi_task(t);
	}
	memset(buf, 0x5a, sizeof(buf));
	for (unsigned int i = 0; i < writes; i++) {
		struct scsi_task *t = iscsi_write10_sync(iscsi, lun, 4096u + i * 8u, buf, XFER, 512,
							 0, 0, 0, 0, 0);

		if (!t || t->status != SCSI_STATUS_GOOD) {
			fprintf(stderr, "count: WRITE(10) %u failed: %s\n", i, iscsi_get_error(iscsi));
			return 1;
		}
		scsi_free_scsi_task(t);
	}
	printf("count: reads %u writes %u bytes %u\n", reads, writes, XFER);
	return 0;
}

static int mode_luns(struct iscsi_context *iscsi, unsigned int luns)
{
	for (unsigned int l = 0; l < luns; l++) {
		/* libiscsi puts the number as it is into bytes 0-1: flat space from 256 */
		int wl = l < 256 ? (int)l : (int)(0x4000u | l);
		struct scsi_task *t;

		if (clear_ua(iscsi, wl)) {
			fprintf(stderr, "luns: TEST UNIT READY of LUN %u failed: %s\n", l,
				iscsi_get_error(iscsi));
			return 1;
		}
		t = iscsi_read10_sync(iscsi, wl, 0, 512, 512, 0, 0, 0, 0, 0);
		if (!t || t->status != SCSI_STATUS_GOOD) {
			fprintf(stderr, "luns: READ(10) of LUN %u failed: %s\n", l,
				iscsi_get_error(iscsi));
			if (t)
				scsi_free_scsi_task(t);
			return 1;
		}
		scsi_free_scsi_task(t);
	}
	printf("luns: %u read\n", luns);
	return 0;
}

static int mode_hold(struct iscsi_context *iscsi, int lun)
{
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	unsigned long n = 0, errors = 0;

	printf("hold: logged in\n");
	fflush(stdout);
	for (;;) {
		struct scsi_task *t;

		/* a READ every 20 ms until SIGTERM or SIGINT is pending */
		if (sigtimedwait(&term_set, NULL, &pause) >= 0)
			break;
		t = iscsi_read10_sync(iscsi, lun, 0, 512, 512, 0, 0, 0, 0, 0);
		if (!t) {
			printf("hold: connection lost after %lu commands (%s)\n", n,
			       iscsi_get_error(iscsi));
			fflush(stdout);
			return 3;
		}
		if (t->status == SCSI_STATUS_GOOD)
			n++;
		else if (!is_ua(t))
			errors++;
		scsi_free_scsi_task(t);
	}
	printf("hold: %lu commands, %lu errors\n", n, errors);
	return errors ? 1 : 0;
}

static int mode_alua(struct iscsi_context *iscsi, int lun)
{
	unsigned char cdb[12] = { 0xa3, 0x0a, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0 };
	struct scsi_task *t = NULL;
	int rc = 0;

	for (int i = 0; i < 16; i++) {
		t = scsi_create_task(12, cdb, SCSI_XFER_READ, 4096);
		if (!t || !iscsi_scsi_command_sync(iscsi, lun, t, NULL)) {
			fprintf(stderr, "alua: REPORT TARGET PORT GROUPS failed: %s\n",
				iscsi_get_error(iscsi));
			return 1;
		}
		if (!is_ua(t))
			break;
		scsi_free_scsi_task(t);
		t = NULL;
	}
	if (!t || t->status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "alua: REPORT TARGET PORT GROUPS: status 0x%x\n", t ? t->status : -1);
		return 1;
	}
	/* 4-byte header, then descriptors: state, flags, tpg id(2), rsvd, status, vendor, count */
	for (int off = 4; off + 8 <= t->datain.size; ) {
		const unsigned char *d = t->datain.data + off;

		printf("alua: tpg %u state %u\n", d[2] << 8 | d[3], d[0] & 0x0f);
		off += 8 + 4 * d[7];
	}
	scsi_free_scsi_task(t);
	for (int i = 0; i < 16; i++) {
		t = iscsi_read10_sync(iscsi, lun, 0, 512, 512, 0, 0, 0, 0, 0);
		if (!t) {
			fprintf(stderr, "alua: READ(10) failed: %s\n", iscsi_get_error(iscsi));
			return 1;
		}
		if (!is_ua(t))
			break;
		scsi_free_scsi_task(t);
	}
	if (t->status == SCSI_STATUS_GOOD)
		printf("read: GOOD\n");
	else if (t->status == SCSI_STATUS_CHECK_CONDITION)
		printf("read: CHECK CONDITION %x/%02x/%02x\n", t->sense.key, t->sense.ascq >> 8,
		       t->sense.ascq & 0xff);
	else
		printf("read: status 0x%x\n", t->status);
	scsi_free_scsi_task(t);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "initiator", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, 'm' },
		{ "reads", required_argument, NULL, 'r' },
		{ "writes", required_argument, NULL, 'w' },
		{ "luns", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	const char *url = NULL, *initiator = "iqn.2026-11.org.isergw:ctl-client", *mode = NULL;
	unsigned int reads = 0, writes = 0, luns = 1;
	struct iscsi_context *iscsi;
	struct iscsi_url *iu;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'u': url = optarg; break;
		case 'i': initiator = optarg; break;
		case 'm': mode = optarg; break;
		case 'r': reads = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'w': writes = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'l': luns = (unsigned int)strtoul(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (!url || !mode)
		usage();
	sigemptyset(&term_set);
	sigaddset(&term_set, SIGTERM);
	sigaddset(&term_set, SIGINT);
	/* hold: a signal sent before the login is taken after it */
	if (strcmp(mode, "hold") == 0)
		sigprocmask(SIG_BLOCK, &term_set, NULL);
	iscsi = iscsi_create_context(initiator);
	if (!iscsi)
		return 1;
	iu = iscsi_parse_full_url(iscsi, url);
	if (!iu) {
		fprintf(stderr, "bad url %s: %s\n", url, iscsi_get_error(iscsi));
		return 2;
	}
	iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(iscsi, ISCSI_HEADER_DIGEST_NONE);
	iscsi_set_targetname(iscsi, iu->target);
	iscsi_set_noautoreconnect(iscsi, 1);
	/* connect and log in only: a full connect's TEST UNIT READY fails in Standby */
	if (iscsi_connect_sync(iscsi, iu->portal) || iscsi_login_sync(iscsi)) {
		fprintf(stderr, "login to %s failed: %s\n", url, iscsi_get_error(iscsi));
		iscsi_destroy_url(iu);
		iscsi_destroy_context(iscsi);
		return 1;
	}
	if (strcmp(mode, "count") == 0)
		rc = mode_count(iscsi, iu->lun, reads, writes);
	else if (strcmp(mode, "hold") == 0)
		rc = mode_hold(iscsi, iu->lun);
	else if (strcmp(mode, "alua") == 0)
		rc = mode_alua(iscsi, iu->lun);
	else if (strcmp(mode, "luns") == 0)
		rc = mode_luns(iscsi, luns);
	else
		usage();
	if (rc != 3)
		iscsi_logout_sync(iscsi);
	iscsi_destroy_url(iu);
	iscsi_destroy_context(iscsi);
	return rc;
}
