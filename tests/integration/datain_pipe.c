/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Edge cases of Data-In sent from a pipe (dm/tcp.c, docs/architecture.md
 * "Data-In without a copy"), with a raw-socket initiator that compares every
 * byte read with the LUN's backing file (read directly, so the file is given
 * too). One line per case, "PASS name: note" or "FAIL name: note"; exit 1 on
 * any failure.
 *
 *   datain_pipe --addr A --port P --target IQN --file PATH [--cases a,b,...]
 *
 * Cases (all by default, in this order):
 *   digests    the same reads (64 KiB .. 2 MiB, page-aligned and not, 8 at
 *              once) with digests None/None (the pipe), CRC32C/None (the pipe,
 *              header digests) and CRC32C/CRC32C (copied): same bytes each time
 *   slow       a reader with a 4 KiB receive buffer: two 1 MiB READs left
 *              unread for a second while another session on the same reactor
 *              is answered, then read slowly; the data intact
 *   teardown   eight 1 MiB READs, a few KiB taken, the connection closed with
 *              the rest in flight; the next session's reads intact (a pipe
 *              left with data must never serve another command)
 *   truncate   the file cut below the LUN's size: a 1 MiB READ across the new
 *              end and one past it end in CHECK CONDITION, MEDIUM ERROR,
 *              UNRECOVERED READ ERROR (03/11/00) as copied reads do, the
 *              session stays; the size restored, reads are right again
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "badinput_common.h"
#include "core/iscsi_spec.h"

/* gw_proto's CRC32C digests (core/pdu.h, whose sn_gt() clashes with badinput_common.h's) */
uint32_t iscsi_digest(const void *buf, size_t len);
uint32_t iscsi_data_digest(const void *buf, size_t len, uint32_t pad);

#define BS        512u
#define MAX_READS 8
#define TIMEOUT_MS 10000

static struct {
	const char *addr;
	int port;
	const char *target;
	const char *file;
	const char *cases;
} cfg = { .addr = "127.0.0.1", .port = 3260 };

struct sess {
	int fd;
	bool hd, dd;
	uint32_t cmd_sn, exp_stat_sn, itt;
};

struct rd {
	uint64_t lba;
	uint32_t blocks;
	uint32_t itt;
	uint8_t *buf;
	uint32_t got;
	bool done;
	uint8_t status;
	uint8_t sense_key, asc, ascq;
};

/* ------------------------------------------------------------- socket I/O */

static int xsend(struct sess *s, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t k = send(s->fd, b, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EIO;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* n bytes within the deadline; chunk > 0 reads at most chunk at a time, pausing pause_us between */
static int xrecv(struct sess *s, void *p, size_t n, long long deadline, size_t chunk,
		 unsigned int pause_us)
{
	uint8_t *b = p;

	while (n) {
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t k;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		k = recv(s->fd, b, chunk && chunk < n ? chunk : n, 0);
		if (k > 0) {
			b += k;
			n -= (size_t)k;
			if (pause_us)
				usleep(pause_us);
		} else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
			return -ECONNRESET; /* closed, or reset */
		}
	}
	return 0;
}

static int sess_connect(struct sess *s, int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)cfg.port) };
	int one = 1;

	memset(s, 0, sizeof(*s));
	s->itt = 0x100;
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0 || inet_pton(AF_INET, cfg.addr, &sa.sin_addr) != 1)
		return -EINVAL;
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* before connect, so that the window offered stays small */
	if (rcvbuf)
		setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (connect(s->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(s->fd);
		s->fd = -1;
		return -errno;
	}
	return 0;
}

static void sess_close(struct sess *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* BHS (DataSegmentLength set here), header digest, data, pad, data digest */
static int pdu_send(struct sess *s, uint8_t *bhs, const void *data, uint32_t len)
{
	static const uint8_t zero[4];
	uint32_t pad = (4 - (len & 3)) & 3;
	uint8_t d[4];
	uint32_t v;
	int rc;

	be24put(bhs + 5, len);
	rc = xsend(s, bhs, ISCSI_BHS_LEN);
	if (!rc && s->hd) {
		v = htole32(iscsi_digest(bhs, ISCSI_BHS_LEN));
		memcpy(d, &v, 4);
		rc = xsend(s, d, 4);
	}
	if (!rc && len)
		rc = xsend(s, data, len);
	if (!rc && pad)
		rc = xsend(s, zero, pad);
	if (!rc && len && s->dd) {
		v = htole32(iscsi_data_digest(data, len, pad));
		memcpy(d, &v, 4);
		rc = xsend(s, d, 4);
	}
	return rc;
}

/* A PDU's BHS (and header digest, checked). */
static int hdr_recv(struct sess *s, uint8_t *bhs, long long deadline)
{
	uint8_t d[4];
	uint32_t v;
	int rc = xrecv(s, bhs, ISCSI_BHS_LEN, deadline, 0, 0);

	if (rc)
		return rc;
	if (bhs[4]) {
		notef("a PDU with an AHS");
		return -EBADMSG;
	}
	if (s->hd) {
		rc = xrecv(s, d, 4, deadline, 0, 0);
		memcpy(&v, d, 4);
		if (rc || le32toh(v) != iscsi_digest(bhs, ISCSI_BHS_LEN)) {
			notef("header digest %s", rc ? "missing" : "wrong");
			return rc ? rc : -EBADMSG;
		}
	}
	return 0;
}

/*
 * The data segment of the PDU whose BHS came last (padding, data digest
 * checked) into dst, or a scratch buffer when dst is NULL or max too small;
 * *out: where it is.
 */
static int data_recv(struct sess *s, const uint8_t *bhs, uint8_t *dst, uint32_t max,
		     uint8_t **out, long long deadline, size_t chunk, unsigned int pause_us)
{
	static uint8_t scratch[1u << 18];
	uint32_t len = be24get(bhs + 5), padded = (len + 3) & ~3u, v;
	uint8_t d[4];
	int rc;

	if (!dst || padded > max) {
		if (padded > sizeof(scratch)) {
			notef("data segment of %u bytes", len);
			return -EBADMSG;
		}
		dst = scratch;
	}
	rc = xrecv(s, dst, padded, deadline, chunk, pause_us);
	if (!rc && len && s->dd) {
		rc = xrecv(s, d, 4, deadline, 0, 0);
		memcpy(&v, d, 4);
		if (!rc && le32toh(v) != iscsi_data_digest(dst, len, padded - len)) {
			notef("data digest wrong");
			return -EBADMSG;
		}
	}
	*out = dst;
	return rc;
}

/* Login straight into the operational stage (no authentication), then full feature phase. */
static int sess_login(struct sess *s, bool hd, bool dd)
{
	static unsigned int n;
	uint8_t isid[6] = { 0x80, 0x23, 0, 0, 0, 0 };
	uint8_t bhs[ISCSI_BHS_LEN], rsp[ISCSI_BHS_LEN], *data;
	struct keys k = { .len = 0 };
	int rc;

	n++;
	isid[4] = (uint8_t)(getpid() & 0xff);
	isid[5] = (uint8_t)n;
	key_add(&k, "InitiatorName=iqn.2026-11.org.isergw:datain-pipe");
	key_addf(&k, "TargetName=%s", cfg.target);
	key_add(&k, "SessionType=Normal");
	key_addf(&k, "HeaderDigest=%s", hd ? "CRC32C" : "None");
	key_addf(&k, "DataDigest=%s", dd ? "CRC32C" : "None");
	key_add(&k, "MaxRecvDataSegmentLength=262144");
	key_add(&k, "ErrorRecoveryLevel=0");
	for (int step = 0; step < 4; step++) {
		long long deadline = now_ms() + TIMEOUT_MS;

		bhs_login(bhs, login_flags(true, ISCSI_STAGE_OPERATIONAL, ISCSI_STAGE_FULL_FEATURE),
			  isid, 0, s->itt, s->cmd_sn, s->exp_stat_sn);
		rc = pdu_send(s, bhs, k.buf, k.len);
		if (!rc)
			rc = hdr_recv(s, rsp, deadline);
		if (!rc)
			rc = data_recv(s, rsp, NULL, 0, &data, deadline, 0, 0);
		if (rc)
			return rc;
		if (login_rsp_status(rsp) != 0) {
			notef("login status 0x%04x", (unsigned int)login_rsp_status(rsp));
			return -EPERM;
		}
		s->exp_stat_sn = be32get(rsp + 24) + 1;
		s->cmd_sn = be32get(rsp + 28);
		if (login_transits_to(rsp, ISCSI_STAGE_FULL_FEATURE)) {
			s->hd = hd;
			s->dd = dd;
			return 0;
		}
		k.len = 0; /* the target wants another round: nothing more to say */
	}
	notef("login never reached full feature phase");
	return -EPROTO;
}

static int sess_open(struct sess *s, bool hd, bool dd, int rcvbuf)
{
	int rc = sess_connect(s, rcvbuf);

	if (rc) {
		notef("connect: %s", strerror(-rc));
		return rc;
	}
	rc = sess_login(s, hd, dd);
	if (rc)
		sess_close(s);
	return rc;
}

/* ------------------------------------------------------------------ READs */

static int read_send(struct sess *s, struct rd *r)
{
	uint8_t bhs[ISCSI_BHS_LEN], cdb[16] = { 0 };
	uint32_t len = r->blocks * BS;

	cdb[0] = 0x88; /* READ(16) */
	be64put(cdb + 2, r->lba);
	be32put(cdb + 10, r->blocks);
	r->itt = ++s->itt;
	r->got = 0;
	r->done = false;
	r->status = 0xff;
	r->sense_key = r->asc = r->ascq = 0;
	free(r->buf);
	r->buf = calloc(1, len + 4);
	if (!r->buf)
		return -ENOMEM;
	bhs_scsi_cmd(bhs, 0, r->itt, ISCSI_CMD_READ, len, s->cmd_sn++, s->exp_stat_sn, cdb);
	return pdu_send(s, bhs, NULL, 0);
}

static struct rd *rd_find(struct rd *rs, int n, uint32_t itt)
{
	for (int i = 0; i < n; i++)
		if (rs[i].itt == itt && !rs[i].done)
			return &rs[i];
	return NULL;
}

/*
 * Receives until every read of rs is answered (data and status), each
 * Data-In's data straight into its buffer; chunk/pause_us: a slow reader.
 */
static int read_collect(struct sess *s, struct rd *rs, int n, size_t chunk, unsigned int pause_us)
{
	for (int left = n; left;) {
		long long deadline = now_ms() + TIMEOUT_MS;
		uint8_t bhs[ISCSI_BHS_LEN], *data, op;
		uint32_t itt, off, len;
		struct rd *r;
		int rc;

		rc = hdr_recv(s, bhs, deadline);
		if (rc) {
			notef("receive: %s", strerror(-rc));
			return rc;
		}
		op = bhs[0] & ISCSI_OPCODE_MASK;
		itt = be32get(bhs + 16);
		off = be32get(bhs + 40);
		len = be24get(bhs + 5);
		r = rd_find(rs, n, itt);
		if (op == ISCSI_OP_DATA_IN && r && off == r->got && off + len <= r->blocks * BS)
			rc = data_recv(s, bhs, r->buf + off, r->blocks * BS - off + 4, &data, deadline,
				       chunk, pause_us);
		else
			rc = data_recv(s, bhs, NULL, 0, &data, deadline, 0, 0);
		if (rc) {
			notef("receive: %s", strerror(-rc));
			return rc;
		}
		if (op == ISCSI_OP_NOP_IN || op == ISCSI_OP_ASYNC_MSG)
			continue;
		if (!r || (op != ISCSI_OP_DATA_IN && op != ISCSI_OP_SCSI_RSP)) {
			notef("opcode 0x%02x, ITT 0x%x: not an answer to a READ of ours", op, itt);
			return -EPROTO;
		}
		if (op == ISCSI_OP_DATA_IN) {
			if (off != r->got || off + len > r->blocks * BS) {
				notef("Data-In of %u bytes at offset %u, expected offset %u", len, off,
				      r->got);
				return -EPROTO;
			}
			r->got += len;
			if (!(bhs[1] & ISCSI_DATAIN_STATUS))
				continue;
		} else if (len >= 2 + 14) {
			/* SenseLength, then fixed format sense data */
			r->sense_key = data[2 + 2] & 0x0f;
			r->asc = data[2 + 12];
			r->ascq = data[2 + 13];
		}
		r->status = bhs[3];
		s->exp_stat_sn = be32get(bhs + 24) + 1;
		r->done = true;
		left--;
	}
	return 0;
}

static int g_file = -1;

/* Each read GOOD, all of its bytes there and equal to the file's. */
static bool reads_match(struct rd *rs, int n)
{
	static uint8_t want[4u << 20];
	bool ok = true;

	for (int i = 0; i < n; i++) {
		struct rd *r = &rs[i];
		uint32_t len = r->blocks * BS;

		if (r->status != 0 || r->got != len) {
			notef("READ %u blocks at LBA %llu: status 0x%02x, %u of %u bytes", r->blocks,
			      (unsigned long long)r->lba, r->status, r->got, len);
			ok = false;
			continue;
		}
		if (len > sizeof(want) || pread(g_file, want, len, (off_t)(r->lba * BS)) != (ssize_t)len) {
			notef("cannot read the file at LBA %llu", (unsigned long long)r->lba);
			ok = false;
			continue;
		}
		for (uint32_t b = 0; b < len; b++) {
			if (r->buf[b] != want[b]) {
				notef("READ %u blocks at LBA %llu: byte %u differs from the file",
				      r->blocks, (unsigned long long)r->lba, b);
				ok = false;
				break;
			}
		}
	}
	return ok;
}

static void reads_free(struct rd *rs, int n)
{
	for (int i = 0; i < n; i++) {
		free(rs[i].buf);
		rs[i].buf = NULL;
	}
}

/* Sends n reads at once, collects them, compares them with the file. */
static bool reads_run(struct sess *s, struct rd *rs, int n)
{
	bool ok;

	for (int i = 0; i < n; i++) {
		if (read_send(s, &rs[i])) {
			notef("cannot send READ %d", i);
			return false;
		}
	}
	ok = read_collect(s, rs, n, 0, 0) == 0 && reads_match(rs, n);
	reads_free(rs, n);
	return ok;
}

/* ------------------------------------------------------------------ cases */

static uint64_t g_blocks; /* of the LUN: the file's size at start */

static bool case_digests(void)
{
	static const struct { bool hd, dd; } modes[] = { { false, false }, { true, false }, { true, true } };
	/* 64 KiB .. 2 MiB (more than a pipe), page-aligned and not, eight at once */
	const uint32_t sizes[MAX_READS] = { 128, 2048, 2047, 4096, 2048, 129, 2048, 8 };
	const uint64_t lbas[MAX_READS] = { 0, 8, 1, 16, 4097, 77, 20480, 3 };
	bool ok = true;

	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]) && ok; m++) {
		struct rd rs[MAX_READS] = { { 0 } };
		struct sess s;

		if (sess_open(&s, modes[m].hd, modes[m].dd, 0))
			return false;
		for (int i = 0; i < MAX_READS; i++) {
			rs[i].lba = lbas[i] % (g_blocks - sizes[i]);
			rs[i].blocks = sizes[i];
		}
		if (!reads_run(&s, rs, MAX_READS)) {
			notef("with HeaderDigest %s, DataDigest %s", modes[m].hd ? "CRC32C" : "None",
			      modes[m].dd ? "CRC32C" : "None");
			ok = false;
		}
		sess_close(&s);
	}
	return ok;
}

static bool case_slow(void)
{
	struct rd rs[2] = { { .lba = 2048, .blocks = 2048 }, { .lba = 8192, .blocks = 2048 } };
	struct rd quick[1] = { { .lba = 4096, .blocks = 8 } };
	struct sess slow, other;
	long long t0;
	bool ok = true;

	if (sess_open(&slow, false, false, 4096))
		return false;
	if (sess_open(&other, false, false, 0)) {
		sess_close(&slow);
		return false;
	}
	for (int i = 0; i < 2 && ok; i++)
		ok = read_send(&slow, &rs[i]) == 0;
	/* the daemon meets a full socket; the other session must not wait for it */
	usleep(200 * 1000);
	t0 = now_ms();
	if (ok && !reads_run(&other, quick, 1)) {
		notef("the other session's READ failed while the slow one was stalled");
		ok = false;
	}
	if (ok && now_ms() - t0 > 5000) {
		notef("the other session waited %lld ms", now_ms() - t0);
		ok = false;
	}
	usleep(800 * 1000);
	/* 4 KiB at a time, 1 ms apart: a few hundred partial sends on the daemon's side */
	if (ok)
		ok = read_collect(&slow, rs, 2, 4096, 1000) == 0 && reads_match(rs, 2);
	reads_free(rs, 2);
	sess_close(&other);
	sess_close(&slow);
	return ok;
}

static bool case_teardown(void)
{
	struct rd rs[MAX_READS] = { { 0 } };
	uint8_t part[8192];
	struct sess s;
	bool ok = true;

	for (int round = 0; round < 3 && ok; round++) {
		if (sess_open(&s, false, false, 4096))
			return false;
		for (int i = 0; i < MAX_READS && ok; i++) {
			rs[i].lba = (uint64_t)(round * MAX_READS + i) * 2048 % (g_blocks - 2048);
			rs[i].blocks = 2048;
			ok = read_send(&s, &rs[i]) == 0;
		}
		usleep(100 * 1000);
		/* a few KiB, then gone with megabytes in flight */
		if (ok && xrecv(&s, part, sizeof(part), now_ms() + TIMEOUT_MS, 0, 0)) {
			notef("nothing came back before the close");
			ok = false;
		}
		reads_free(rs, MAX_READS);
		sess_close(&s);
	}
	/* whatever the pipes of the lost connections held must not show up here */
	for (int round = 0; round < 3 && ok; round++) {
		if (sess_open(&s, false, false, 0))
			return false;
		for (int i = 0; i < MAX_READS; i++) {
			rs[i].lba = (uint64_t)(i * 2 + 1) * 2048 % (g_blocks - 2048);
			rs[i].blocks = 2048;
		}
		ok = reads_run(&s, rs, MAX_READS);
		sess_close(&s);
	}
	return ok;
}

static bool expect_medium_error(struct sess *s, uint64_t lba, const char *what)
{
	struct rd r[1] = { { .lba = lba, .blocks = 2048 } };
	bool ok;

	if (read_send(s, r) || read_collect(s, r, 1, 0, 0)) {
		reads_free(r, 1);
		return false;
	}
	ok = r[0].status == 0x02 && r[0].sense_key == 0x3 && r[0].asc == 0x11 && r[0].ascq == 0x00;
	if (!ok)
		notef("READ %s: status 0x%02x sense %x/%02x/%02x (want 0x02 3/11/00)", what,
		      r[0].status, r[0].sense_key, r[0].asc, r[0].ascq);
	reads_free(r, 1);
	return ok;
}

static bool case_truncate(void)
{
	off_t size = (off_t)(g_blocks * BS), cut = size / 2;
	struct rd rs[2] = { { .lba = 0, .blocks = 2048 }, { .lba = 2048, .blocks = 2048 } };
	struct sess s;
	bool ok;

	if (sess_open(&s, false, false, 0))
		return false;
	if (ftruncate(g_file, cut) < 0) {
		notef("ftruncate: %s", strerror(errno));
		sess_close(&s);
		return false;
	}
	/* across the new end (a short read), then wholly past it */
	ok = expect_medium_error(&s, (uint64_t)cut / BS - 1024, "across the end of the file") &&
	     expect_medium_error(&s, (uint64_t)cut / BS + 4096, "past the end of the file") &&
	     reads_run(&s, rs, 2);
	if (ftruncate(g_file, size) < 0) {
		notef("ftruncate back: %s", strerror(errno));
		ok = false;
	}
	/* the cut part reads as zeroes now, like the file */
	rs[0].lba = (uint64_t)cut / BS - 1024;
	rs[1].lba = (uint64_t)cut / BS + 4096;
	ok = ok && reads_run(&s, rs, 2);
	sess_close(&s);
	return ok;
}

static const struct {
	const char *name;
	bool (*run)(void);
} cases[] = {
	{ "digests", case_digests },
	{ "slow", case_slow },
	{ "teardown", case_teardown },
	{ "truncate", case_truncate },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static const char *case_name(size_t i)
{
	return cases[i].name;
}

int main(int argc, char **argv)
{
	struct stat st;
	long v;

	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val) {
			fprintf(stderr, "%s: %s needs a value\n", argv[0], a);
			return 2;
		}
		if (!strcmp(a, "--addr"))
			cfg.addr = val;
		else if (!strcmp(a, "--port") && parse_num(argv[0], val, 65535, &v))
			cfg.port = (int)v;
		else if (!strcmp(a, "--target"))
			cfg.target = val;
		else if (!strcmp(a, "--file"))
			cfg.file = val;
		else if (!strcmp(a, "--cases"))
			cfg.cases = val;
		else {
			fprintf(stderr, "usage: %s --addr A --port P --target IQN --file PATH "
				"[--cases a,b,...]\n", argv[0]);
			return 2;
		}
	}
	if (!cfg.target || !cfg.file) {
		fprintf(stderr, "%s: --target and --file are required\n", argv[0]);
		return 2;
	}
	if (cfg.cases && !case_list_known(argv[0], cfg.cases, case_name, NCASES))
		return 2;
	g_file = open(cfg.file, O_RDWR | O_CLOEXEC);
	if (g_file < 0 || fstat(g_file, &st) < 0 || st.st_size < (16 << 20)) {
		fprintf(stderr, "%s: %s: cannot open, or smaller than 16 MiB\n", argv[0], cfg.file);
		return 2;
	}
	g_blocks = (uint64_t)st.st_size / BS;
	for (size_t i = 0; i < NCASES; i++) {
		if (cfg.cases && !in_list(cfg.cases, cases[i].name))
			continue;
		verdict(cases[i].name, cases[i].run());
	}
	close(g_file);
	return failures ? 1 : 0;
}
