/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a multipath initiator learns about a LU through one target port
 * (libiscsi, synchronous API):
 *
 *   cluster_probe [--initiator NAME] [--stpg TPG=STATE,...] [--abort-after-ms MS]
 *                 [--no-probe] iscsi://HOST:PORT/IQN/LUN
 *
 * With --stpg it first sends SET TARGET PORT GROUPS (STATE: the SPC-4 code,
 * 0 Active/Optimized ... 3 Unavailable) and prints its outcome:
 *   stpg good | stpg status 0xSS sense K/AA/QQ   (hex, CHECK CONDITION)
 * and with --abort-after-ms it sends ABORT TASK for it after MS ms if it
 * has not completed by then, and prints
 *   stpg aborted, task management response N
 * With --stpg-repeat N (1..120) it sends N such commands at once and prints
 *   stpg x N: good G, not-ready R, refused F, other O
 * Then, unless --no-probe, prints, one item per line:
 *   multip M                       standard INQUIRY, MULTIP (byte 6 bit 4)
 *   serial S                       VPD 80h
 *   naa HEX                        VPD 83h, NAA designator of the LU
 *   port_name NAME                 VPD 83h, SCSI name string of the target port
 *                                  ("<iqn>,t,0x<TPGT>", association 1, type 8)
 *   rel_port N                     VPD 83h, relative target port (type 4)
 *   tpg N                          VPD 83h, target port group (type 5)
 *   group ID state S pref P ports A,B,...
 *                                  REPORT TARGET PORT GROUPS (extended header),
 *                                  one line per descriptor, in the target's order
 * The pages are parsed here from the raw bytes (not by libiscsi), with every
 * length checked against what was returned. Exits 1 on any error (a unit
 * attention is retried a few times: a fresh nexus may have one pending).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include "scsi_pages.h"

#define ALLOC 4096

/* Runs a data-in CDB; retries unit attentions. Returns the task (GOOD) or NULL. */
static struct scsi_task *run(struct iscsi_context *iscsi, int lun, unsigned char *cdb, int len,
			     const char *what)
{
	for (int tries = 0; tries < 8; tries++) {
		struct scsi_task *t = scsi_create_task(len, cdb, SCSI_XFER_READ, ALLOC);

		if (!t) {
			fprintf(stderr, "cluster_probe: %s: out of memory\n", what);
			return NULL;
		}
		if (iscsi_scsi_command_sync(iscsi, lun, t, NULL) == NULL) {
			fprintf(stderr, "cluster_probe: %s: transport error: %s\n", what,
				iscsi_get_error(iscsi));
			scsi_free_scsi_task(t);
			return NULL;
		}
		if (t->status == SCSI_STATUS_GOOD)
			return t;
		if (t->status == SCSI_STATUS_CHECK_CONDITION &&
		    t->sense.key == SCSI_SENSE_UNIT_ATTENTION) {
			scsi_free_scsi_task(t);
			continue;
		}
		fprintf(stderr, "cluster_probe: %s: status 0x%02x sense %s (%s)\n", what, t->status,
			scsi_sense_key_str(t->sense.key), scsi_sense_ascq_str(t->sense.ascq));
		scsi_free_scsi_task(t);
		return NULL;
	}
	fprintf(stderr, "cluster_probe: %s: unit attentions did not stop\n", what);
	return NULL;
}

static struct scsi_task *vpd(struct iscsi_context *iscsi, int lun, uint8_t page)
{
	unsigned char cdb[6] = { 0x12, 0x01, page, ALLOC >> 8, ALLOC & 0xff, 0 };
	char what[32];

	snprintf(what, sizeof(what), "INQUIRY VPD %02xh", page);
	return run(iscsi, lun, cdb, sizeof(cdb), what);
}

struct stpg_wait {
	int done;
	int status;
	int key, ascq;
};

static void stpg_cb(struct iscsi_context *iscsi, int status, void *command_data, void *private_data)
{
	struct scsi_task *t = command_data;
	struct stpg_wait *w = private_data;

	(void)iscsi;
	w->done = 1;
	w->status = status;
	if (t && status == SCSI_STATUS_CHECK_CONDITION) {
		w->key = t->sense.key;
		w->ascq = t->sense.ascq;
	}
}

/*
 * SET TARGET PORT GROUPS with the descriptors in spec ("TPG=STATE,..."),
 * asynchronously so that it can be aborted; unit attentions are retried.
 */
static int stpg(struct iscsi_context *iscsi, int lun, const char *spec, int abort_ms)
{
	unsigned char param[4 + 4 * 16] = { 0 };
	unsigned char cdb[12] = { 0xa4, 0x0a };
	char buf[256], *save = NULL;
	uint32_t len = 4;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned int tpg, state;

		if (sscanf(tok, "%u=%u", &tpg, &state) != 2 || tpg > 65535 || state > 15 ||
		    len + 4 > sizeof(param)) {
			fprintf(stderr, "cluster_probe: bad --stpg item '%s'\n", tok);
			return -EINVAL;
		}
		param[len] = (unsigned char)state;
		param[len + 2] = (unsigned char)(tpg >> 8);
		param[len + 3] = (unsigned char)tpg;
		len += 4;
	}
	cdb[9] = (unsigned char)len;
	for (int tries = 0; tries < 8; tries++) {
		struct stpg_wait w = { 0 };
		struct scsi_task *t = scsi_create_task(sizeof(cdb), cdb, SCSI_XFER_WRITE, (int)len);
		struct iscsi_data d = { .size = len, .data = param };
		int waited = 0;

		if (!t)
			return -ENOMEM;
		if (iscsi_scsi_command_async(iscsi, lun, t, stpg_cb, &d, &w)) {
			fprintf(stderr, "cluster_probe: STPG not sent: %s\n", iscsi_get_error(iscsi));
			scsi_free_scsi_task(t);
			return -EIO;
		}
		while (!w.done) {
			struct pollfd p = { .fd = iscsi_get_fd(iscsi), .events = iscsi_which_events(iscsi) };
			int n = poll(&p, 1, 100);

			if (n < 0 || iscsi_service(iscsi, n > 0 ? p.revents : 0) < 0) {
				fprintf(stderr, "cluster_probe: STPG: transport error: %s\n",
					iscsi_get_error(iscsi));
				return -EIO;
			}
			waited += n > 0 ? 0 : 100;
			if (!w.done && abort_ms >= 0 && waited >= abort_ms) {
				int rc = iscsi_task_mgmt_abort_task_sync(iscsi, t);

				if (!w.done) {
					iscsi_scsi_cancel_task(iscsi, t);
					scsi_free_scsi_task(t);
					printf("stpg aborted, task management response %d\n", rc);
					return 0;
				}
			}
		}
		if (w.status == SCSI_STATUS_CHECK_CONDITION && w.key == SCSI_SENSE_UNIT_ATTENTION) {
			scsi_free_scsi_task(t);
			continue;
		}
		if (w.status == SCSI_STATUS_GOOD)
			printf("stpg good\n");
		else if (w.status == SCSI_STATUS_CHECK_CONDITION)
			printf("stpg status 0x%02x sense %x/%02x/%02x\n", w.status, w.key,
			       (w.ascq >> 8) & 0xff, w.ascq & 0xff);
		else
			printf("stpg status 0x%02x\n", w.status);
		scsi_free_scsi_task(t);
		return 0;
	}
	fprintf(stderr, "cluster_probe: STPG: unit attentions did not stop\n");
	return -EIO;
}

/* N STPGs in flight at once (after the nexus's unit attentions are cleared). */
static int stpg_many(struct iscsi_context *iscsi, int lun, const char *spec, int n)
{
	unsigned char param[8] = { 0 }, cdb[12] = { 0xa4, 0x0a, 0, 0, 0, 0, 0, 0, 0, 8 };
	struct stpg_wait w[120];
	struct scsi_task *t[120];
	struct iscsi_data d = { .size = 8, .data = param };
	unsigned int tpg, state;
	int good = 0, nr = 0, refused = 0, other = 0, left = n;

	if (sscanf(spec, "%u=%u", &tpg, &state) != 2 || tpg > 65535 || state > 15) {
		fprintf(stderr, "cluster_probe: --stpg-repeat takes one TPG=STATE\n");
		return -EINVAL;
	}
	param[4] = (unsigned char)state;
	param[6] = (unsigned char)(tpg >> 8);
	param[7] = (unsigned char)tpg;
	for (int tries = 0; tries < 8; tries++) {
		struct scsi_task *tur = iscsi_testunitready_sync(iscsi, lun);
		int st = tur ? tur->status : -1;

		if (tur)
			scsi_free_scsi_task(tur);
		if (st == SCSI_STATUS_GOOD)
			break;
	}
	memset(w, 0, sizeof(w));
	for (int i = 0; i < n; i++) {
		t[i] = scsi_create_task(sizeof(cdb), cdb, SCSI_XFER_WRITE, 8);
		if (!t[i] || iscsi_scsi_command_async(iscsi, lun, t[i], stpg_cb, &d, &w[i])) {
			fprintf(stderr, "cluster_probe: STPG %d not sent\n", i);
			return -EIO;
		}
	}
	while (left > 0) {
		struct pollfd p = { .fd = iscsi_get_fd(iscsi), .events = iscsi_which_events(iscsi) };
		int k = poll(&p, 1, 100);

		if (k < 0 || iscsi_service(iscsi, k > 0 ? p.revents : 0) < 0) {
			fprintf(stderr, "cluster_probe: STPG: transport error: %s\n",
				iscsi_get_error(iscsi));
			return -EIO;
		}
		left = 0;
		for (int i = 0; i < n; i++)
			left += !w[i].done;
	}
	for (int i = 0; i < n; i++) {
		if (w[i].status == SCSI_STATUS_GOOD)
			good++;
		else if (w[i].status == SCSI_STATUS_CHECK_CONDITION && w[i].key == 2 &&
			 w[i].ascq == 0x040a)
			nr++;
		else if (w[i].status == SCSI_STATUS_CHECK_CONDITION && w[i].key == 4 &&
			 w[i].ascq == 0x670a)
			refused++;
		else
			other++;
		scsi_free_scsi_task(t[i]);
	}
	printf("stpg x %d: good %d, not-ready %d, refused %d, other %d\n", n, good, nr, refused,
	       other);
	return 0;
}

static int probe(struct iscsi_context *iscsi, int lun)
{
	unsigned char rtpg[12] = { 0xa3, 0x0a | 0x20, 0, 0, 0, 0, 0, 0, ALLOC >> 8, ALLOC & 0xff };
	struct scsi_task *t;
	const unsigned char *d, *e, *g;
	uint32_t n, off;
	int rc;
	unsigned char inq[6] = { 0x12, 0, 0, 0, 96, 0 };

	/* standard INQUIRY */
	t = run(iscsi, lun, inq, sizeof(inq), "INQUIRY");
	if (!t)
		return -EIO;
	if (t->datain.size < 8) {
		fprintf(stderr, "cluster_probe: standard INQUIRY data too short\n");
		scsi_free_scsi_task(t);
		return -EIO;
	}
	printf("multip %u\n", (t->datain.data[6] >> 4) & 1);
	scsi_free_scsi_task(t);

	/* unit serial number */
	t = vpd(iscsi, lun, 0x80);
	if (!t)
		return -EIO;
	d = t->datain.data;
	n = vpd_page_len(d, t->datain.size);
	if (n < 5 || d[1] != 0x80) {
		fprintf(stderr, "cluster_probe: VPD 80h malformed\n");
		scsi_free_scsi_task(t);
		return -EIO;
	}
	printf("serial %.*s\n", (int)(n - 4), (const char *)&d[4]);
	scsi_free_scsi_task(t);

	/* device identification */
	t = vpd(iscsi, lun, 0x83);
	if (!t)
		return -EIO;
	d = t->datain.data;
	n = vpd_page_len(d, t->datain.size);
	if (n == 0 || d[1] != 0x83) {
		fprintf(stderr, "cluster_probe: VPD 83h malformed\n");
		scsi_free_scsi_task(t);
		return -EIO;
	}
	off = 4;
	while ((rc = vpd83_next(d, n, &off, &e)) > 0) {
		uint32_t len = e[3];
		uint8_t assoc = (e[1] >> 4) & 3, type = e[1] & 0x0f;

		if (assoc == 0 && type == 3) {
			printf("naa ");
			for (uint32_t k = 0; k < len; k++)
				printf("%02x", e[4 + k]);
			printf("\n");
		} else if (assoc == 1 && type == 8 && len > 0) {
			/* NUL-terminated, padded with NULs */
			printf("port_name %.*s\n", (int)strnlen((const char *)&e[4], len),
			       (const char *)&e[4]);
		} else if (assoc == 1 && type == 4 && len == 4) {
			printf("rel_port %u\n", be16(&e[6]));
		} else if (assoc == 1 && type == 5 && len == 4) {
			printf("tpg %u\n", be16(&e[6]));
		}
	}
	if (rc < 0) {
		fprintf(stderr, "cluster_probe: VPD 83h designator overruns the page\n");
		scsi_free_scsi_task(t);
		return -EIO;
	}
	scsi_free_scsi_task(t);

	/* REPORT TARGET PORT GROUPS, extended header */
	t = run(iscsi, lun, rtpg, sizeof(rtpg), "REPORT TARGET PORT GROUPS");
	if (!t)
		return -EIO;
	d = t->datain.data;
	n = rtpg_len(d, t->datain.size);
	if (n == 0 || (d[4] & 0x70) != 0x10) {
		fprintf(stderr, "cluster_probe: REPORT TARGET PORT GROUPS malformed (%d bytes)\n",
			t->datain.size);
		scsi_free_scsi_task(t);
		return -EIO;
	}
	off = 8;
	while ((rc = rtpg_next(d, n, &off, &g)) > 0) {
		uint32_t ports = g[7];

		printf("group %u state %u pref %u ports ", be16(&g[2]), g[0] & 0x0f, g[0] >> 7);
		for (uint32_t k = 0; k < ports; k++)
			printf("%s%u", k ? "," : "", be16(&g[8 + 4 * k + 2]));
		printf("\n");
	}
	if (rc < 0) {
		fprintf(stderr, "cluster_probe: RTPG descriptor overruns the data\n");
		scsi_free_scsi_task(t);
		return -EIO;
	}
	if (off != n) {
		fprintf(stderr, "cluster_probe: RTPG: %u trailing bytes\n", n - off);
		scsi_free_scsi_task(t);
		return -EIO;
	}
	scsi_free_scsi_task(t);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "initiator", required_argument, NULL, 'i' },
		{ "stpg", required_argument, NULL, 's' },
		{ "abort-after-ms", required_argument, NULL, 'a' },
		{ "no-probe", no_argument, NULL, 'n' },
		{ "stpg-repeat", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *initiator = "iqn.2026-11.org.isergw:cluster-probe", *stpg_spec = NULL;
	struct iscsi_context *iscsi;
	struct iscsi_url *u;
	int c, rc = 0, lun, abort_ms = -1, do_probe = 1, repeat = 0;

	while ((c = getopt_long(argc, argv, "i:", lo, NULL)) != -1) {
		if (c == 'i') {
			initiator = optarg;
		} else if (c == 's') {
			stpg_spec = optarg;
		} else if (c == 'a') {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 0 || v > 600000) {
				fprintf(stderr, "cluster_probe: --abort-after-ms wants 0..600000\n");
				return 2;
			}
			abort_ms = (int)v;
		} else if (c == 'n') {
			do_probe = 0;
		} else if (c == 'r') {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 1 || v > 120) {
				fprintf(stderr, "cluster_probe: --stpg-repeat wants 1..120\n");
				return 2;
			}
			repeat = (int)v;
		} else {
			fprintf(stderr, "usage: cluster_probe [--initiator NAME] iscsi://HOST:PORT/IQN/LUN\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: cluster_probe [--initiator NAME] iscsi://HOST:PORT/IQN/LUN\n");
		return 2;
	}
	iscsi = iscsi_create_context(initiator);
	if (!iscsi) {
		fprintf(stderr, "cluster_probe: cannot create an iscsi context\n");
		return 1;
	}
	u = iscsi_parse_full_url(iscsi, argv[optind]);
	if (!u) {
		fprintf(stderr, "cluster_probe: bad url %s: %s\n", argv[optind], iscsi_get_error(iscsi));
		iscsi_destroy_context(iscsi);
		return 1;
	}
	iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(iscsi, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	iscsi_set_targetname(iscsi, u->target);
	iscsi_set_timeout(iscsi, 30);
	lun = u->lun;
	/*
	 * connect and log in only: a full connect's TEST UNIT READY fails through
	 * a port that is not Active (Standby, Unavailable); unit attentions are
	 * retried by each command instead
	 */
	if (iscsi_connect_sync(iscsi, u->portal) != 0 || iscsi_login_sync(iscsi) != 0) {
		fprintf(stderr, "cluster_probe: login to %s failed: %s\n", argv[optind],
			iscsi_get_error(iscsi));
		iscsi_destroy_url(u);
		iscsi_destroy_context(iscsi);
		return 1;
	}
	iscsi_destroy_url(u);
	if (stpg_spec && repeat)
		rc = stpg_many(iscsi, lun, stpg_spec, repeat);
	else if (stpg_spec)
		rc = stpg(iscsi, lun, stpg_spec, abort_ms);
	if (!rc && do_probe)
		rc = probe(iscsi, lun);
	iscsi_logout_sync(iscsi);
	iscsi_destroy_context(iscsi);
	return rc ? 1 : 0;
}
