/* SPDX-License-Identifier: Apache-2.0 */
// LINK: gw_scsi isergw_config isergw_common
// COVERS: gateway/scsi/scsi_alua.c gateway/scsi/scsi_cluster.c gateway/scsi/scsi_cmd.c gateway/scsi/scsi_held.c gateway/scsi/scsi_lu.c gateway/scsi/scsi_pr.c gateway/scsi/scsi_sbc.c gateway/scsi/scsi_shared.c gateway/scsi/scsi_spc.c gateway/scsi/scsi_xcopy.c
/*
 * The SCSI layer (gateway/scsi/) as the iSCSI core drives it: CDBs and
 * parameter lists from six I_T nexuses (three initiators, each through two
 * target ports) to three LUs in memory, with the unit attentions,
 * reservations, ALUA states and task management of a target that several
 * hosts share.
 *
 * Every input starts from the same state: the ALUA port map (groups 1 and 2
 * local, group 3 another node's), LU 0 and LU 1 (64 blocks of 512 bytes,
 * device group "default": EXTENDED COPY between them) and LU 2 (16 blocks of
 * 4096 bytes, device group "dg2", MAXIMUM TRANSFER LENGTH 32 KiB), zeroed,
 * no reservation, no unit attention. It runs on a reactor of its own (made
 * and freed per input) so that commands can be held: SET TARGET PORT GROUPS
 * for the ALUA policy owner, changes of an LU state the cluster carries for
 * the HA agent; the input plays both, and the lease runs on a clock the
 * input advances.
 *
 * Input: two bytes of setup, then records, executed in order.
 *   setup 0: bit 0 ALUA policy external, bit 1 its owner listens, bit 2 the
 *       lease enforced, bits 3-4 the owner group of "default" (0: none),
 *       bits 5-6 its other groups' state, bit 7 LU 0 without write cache
 *       and LU 1 fully provisioned
 *   setup 1: bit 0 LU 0 and LU 1 keep their state in the cluster, bit 1 the
 *       agent takes proposals, bit 2 it grants LBA locks, bit 3 LU 2's
 *       backend is not reached at start (no geometry until it grows)
 *   record byte 0 = KIND << 6 | arg
 *   KIND 0: a SCSI command, its I/O completed before the next record
 *   KIND 1: the same, left in flight (its I/O waits: commands overlap)
 *       arg: nexus (bits 0-2, mod 6), LUN (bits 3-5: 0-2, else a LUN with
 *       no LU); then flags (bit 0 R, bit 1 W, bits 2-4 task attribute),
 *       the CDB length (mod 33; the command's CDB is 16 bytes or more, as
 *       the core builds it) and the CDB, the Expected Data Transfer Length
 *       (2 bytes), and with W the length of the data-out given (2 bytes)
 *       and those bytes (the rest of the buffer is zero)
 *   KIND 2: an event (arg mod EV_N, then argument bytes): task management,
 *       nexus loss, what the HA agent, another node or the ALUA policy
 *       owner does
 *   KIND 3: the backstore (arg mod IO_N): complete one queued I/O (in any
 *       order), fail the next one, refuse the next submission
 * At the end every command still running is aborted (as a dropped
 * connection does), every proposal refused, and all must complete; then
 * everything is freed.
 *
 * Sanity checks (abort): done is called exactly once; sense data fits and
 * is fixed format with CHECK CONDITION only; GOOD carries no sense; a field
 * pointer points into the CDB or the data-out; a data-in command writes no
 * byte past the length it reports, and reports no more than its CDB's
 * allocation length; GET LBA STATUS has the starting LBA's descriptor; no
 * write takes its data from the buffer of a command without the W bit (the
 * core's pool holds another command's data there); task management that
 * waits is answered once; at the end nothing is held and no I/O is queued.
 *
 * Seeds (tests/fuzz/corpus/fuzz_scsi/): written by tests/fuzz/scsi_seeds.py
 * from the CDBs Linux (sd, scsi_dh_alua) and libiscsi's iscsi-test-cu send,
 * byte for byte as SPC-4/SBC-3 lay them out.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "scsi/scsi.h"
#include "scsi/scsi_shared.h"
#include "common/list.h"
#include "common/log.h"
#include "common/reactor.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int bdev_get_alloc_status(struct bdev *b, uint64_t offset, uint64_t len, bool *mapped,
			  uint64_t *run_len);

#define NLU        3
#define NINIT      3
#define NPORT      2
#define NNEXUS     (NINIT * NPORT)
#define QMAX       512
#define MAX_CMDS   128          /* commands per input */
#define MAX_RECORDS 256
#define MAX_REQ    64           /* ALUA requests remembered per input */
#define DRAIN_ROUNDS 64

/* ------------------------------------------------- the memory backstore */

struct fz_mem {
	struct bdev b;
	uint8_t *data;
	struct bdev_io *q[QMAX];
	unsigned int qn;
	int fail_err;           /* the next completed I/O fails with this */
	uint8_t fail_status;    /* -EREMOTEIO: the backend's status */
	int submit_err;         /* the next submission is refused with this */
	bool awaits;
	bdev_listener_fn listener;      /* the LU, told when the geometry changes */
	void *listener_arg;
};

static void check_write_source(const struct bdev_io *io);

static int mem_submit(struct bdev *b, struct bdev_io *io)
{
	struct fz_mem *m = (struct fz_mem *)(void *)b;
	uint64_t total = 0;
	int i;

	if (m->submit_err) {
		int rc = m->submit_err;

		m->submit_err = 0;
		return rc;
	}
	if (io->offset > b->info.size_bytes || io->len > b->info.size_bytes - io->offset)
		return -EINVAL;
	if (io->op == BDEV_OP_READ || io->op == BDEV_OP_WRITE) {
		/* the backstore contract: the iovecs add up to len */
		for (i = 0; i < io->iovcnt; i++)
			total += io->iov[i].iov_len;
		if (total != io->len || (io->flags & BDEV_IO_COMPARE_AND_WRITE))
			return -EINVAL;
		if (io->op == BDEV_OP_WRITE)
			check_write_source(io);
	}
	if (m->qn >= QMAX)
		return -ENOMEM;
	m->q[m->qn++] = io;
	return 0;
}

static void mem_close(struct bdev *b)
{
	(void)b;
}

static bool mem_awaits(struct bdev *b)
{
	return ((struct fz_mem *)(void *)b)->awaits;
}

static void mem_set_listener(struct bdev *b, bdev_listener_fn fn, void *arg)
{
	struct fz_mem *m = (struct fz_mem *)(void *)b;

	m->listener = fn;
	m->listener_arg = arg;
}

static const struct bdev_ops mem_ops = {
	.name = "mem",
	.submit = mem_submit,
	.close = mem_close,
	.set_listener = mem_set_listener,
	.awaits_registration = mem_awaits,
};

/*
 * The backstore grows by `blocks`, or a backend unreachable at start is
 * found (offline, no geometry): the LU hears of it as from the iscsi
 * backstore's discovery thread.
 */
static void mem_grow(struct fz_mem *m, uint32_t bs, uint64_t blocks)
{
	uint64_t old = m->b.info.size_bytes, size;
	uint8_t *d;

	if (!m->b.info.size_bytes)
		m->b.info.block_size = bs;
	size = old + blocks * m->b.info.block_size;
	d = realloc(m->data, size ? size : 1);
	if (!d)
		abort();
	memset(d + old, 0, size - old);
	m->data = d;
	m->b.info.size_bytes = size;
	atomic_store(&m->b.offline, false);
	if (m->listener)
		m->listener(m->listener_arg, &m->b);
}

/* GET LBA STATUS: a block of zeroes is deallocated (LBPRZ), anything else mapped. */
int bdev_get_alloc_status(struct bdev *b, uint64_t offset, uint64_t len, bool *mapped,
			  uint64_t *run_len)
{
	struct fz_mem *m = (struct fz_mem *)(void *)b;
	uint32_t bs = b->info.block_size;
	uint64_t off;
	bool first = true, cur = false;

	if (b->ops != &mem_ops)
		return -EOPNOTSUPP;
	if (len == 0 || offset >= b->info.size_bytes || len > b->info.size_bytes - offset)
		return -EINVAL;
	for (off = offset; off < offset + len; off += bs) {
		uint64_t end = off + bs < offset + len ? off + bs : offset + len;
		bool nz = false;

		for (uint64_t i = off; i < end && !nz; i++)
			nz = m->data[i] != 0;
		if (first) {
			cur = nz;
			first = false;
		} else if (nz != cur) {
			break;
		}
	}
	*mapped = cur;
	*run_len = off - offset;
	return 0;
}

/* Completes the queued I/O at index i; its callback may queue more. */
static void mem_complete(struct fz_mem *m, unsigned int i)
{
	struct bdev_io *io = m->q[i];
	uint64_t done = 0;
	int k;

	memmove(&m->q[i], &m->q[i + 1], (m->qn - i - 1) * sizeof(m->q[0]));
	m->qn--;
	io->result = 0;
	if (m->fail_err) {
		io->result = m->fail_err;
		if (m->fail_err == -EREMOTEIO) {
			/* a SCSI backend's own answer */
			io->scsi_status = m->fail_status;
			io->sense_len = 0;
			if (io->sense && m->fail_status == SCSI_STATUS_CHECK_CONDITION) {
				memset(io->sense, 0, 18);
				io->sense[0] = 0x70;
				io->sense[2] = SCSI_SK_MEDIUM_ERROR;
				io->sense[7] = 10;
				io->sense[12] = 0x11;
				io->sense_len = 18;
			}
		}
		m->fail_err = 0;
		io->cb(io);
		return;
	}
	switch (io->op) {
	case BDEV_OP_READ:
	case BDEV_OP_WRITE:
		for (k = 0; k < io->iovcnt; k++) {
			uint8_t *disk = m->data + io->offset + done;

			if (io->op == BDEV_OP_READ)
				memcpy(io->iov[k].iov_base, disk, io->iov[k].iov_len);
			else
				memcpy(disk, io->iov[k].iov_base, io->iov[k].iov_len);
			done += io->iov[k].iov_len;
		}
		break;
	case BDEV_OP_UNMAP:
	case BDEV_OP_WRITE_ZEROES:
		memset(m->data + io->offset, 0, io->len);
		break;
	case BDEV_OP_FLUSH:
		break;
	}
	io->cb(io);
}

/* -------------------------------------------------------------- the state */

struct fz_cmd {
	struct scsi_cmd c;
	struct list_head link;
	uint8_t *buf;           /* the task buffer (the SCSI layer may hide it: c.buf NULL) */
	uint32_t len;           /* and its length, the EDTL */
	int ndone;
	bool aborted;
	bool canary;            /* buf was filled with CANARY and nothing else is written to it */
	bool have_alloc;
	uint32_t alloc;         /* the CDB's allocation length */
	uint8_t nexus;
};

#define CANARY 0xa5
static uint8_t canary[UINT16_MAX];      /* CANARY bytes, as long as the longest buffer */

struct fz {
	struct reactor *r;
	struct fz_mem *mem[NLU];
	struct scsi_lu *lu[NLU];
	struct scsi_itn itn[NNEXUS];
	bool attached[NNEXUS];
	struct list_head running;       /* struct fz_cmd, submitted, not done */
	struct list_head done;          /* done, freed at the next step */
	unsigned int ncmds;
	const uint8_t *p;
	size_t n;
	unsigned int nrec;
	unsigned int drain;
	bool logged_out;
	bool finished;
	unsigned int waits;             /* task management waiting for the cluster */
	/* the ALUA policy owner */
	bool owner_listens;
	uint64_t req_id[MAX_REQ];
	unsigned int nreq;
	/* PREEMPT AND ABORT: the nexuses whose tasks the core aborts next */
	struct {
		const struct scsi_lu *lu;
		bool every;
		char iport[256];
		uint16_t rel;
	} aborts[64];
	unsigned int naborts;
	/* the HA agent carrying LU 0's and LU 1's state (setup byte 2) */
	bool cluster;
	bool agent_listens;
	bool locks_listen;
	uint64_t version[NLU];
	unsigned int nprops;
	uint64_t lock_id[MAX_REQ];
	unsigned int nlocks;
};

/* Proposals handed to the agent, not answered yet (too big for the stack). */
#define MAX_PROPS 8
static struct fz_prop {
	uint64_t id;
	uint8_t naa[16];
	bool wait;
	struct shs_state st;
	size_t nev;
	struct shs_event ev[SCSI_LU_EVENTS_MAX];
} props[MAX_PROPS];
static struct shs_state raw_state;

static struct fz fz;
static uint64_t fake_now_ms;
static int report_fd = 2;       /* stderr as it was before -close_fd_mask=2 */

static const struct scsi_port ports[NPORT] = {
	{ 1, 1, "iqn.2026-11.org.isergw:fuzz,t,0x0001" },
	{ 2, 2, "iqn.2026-11.org.isergw:fuzz,t,0x0002" },
};

static const char *const initiators[NINIT] = {
	"iqn.1994-05.com.redhat:host-a",
	"iqn.2004-10.com.ubuntu:01:host-b",
	"iqn.2026-11.org.example:host-c",
};

static const char *const isids[NINIT] = { "023d00000001", "400001370000", "800000000007" };

static uint64_t fake_clock(void)
{
	return fake_now_ms;
}

static uint8_t take8(void)
{
	uint8_t v = 0;

	if (fz.n) {
		v = *fz.p++;
		fz.n--;
	}
	return v;
}

static uint16_t take16(void)
{
	uint16_t hi = take8();

	return (uint16_t)(hi << 8 | take8());
}

static void check(bool ok, const char *what, const struct fz_cmd *fc)
{
	if (ok)
		return;
	dprintf(report_fd, "fuzz_scsi: %s (cdb %02x %02x %02x .., status 0x%02x, sense_len %u, "
		"xfer_len %u, buf_len %u)\n", what, fc->c.cdb[0], fc->c.cdb[1], fc->c.cdb[2],
		fc->c.status, fc->c.sense_len, fc->c.xfer_len, fc->c.buf_len);
	abort();
}

/* The allocation length field of the commands that return parameter data. */
static bool alloc_len(const uint8_t *cdb, uint32_t *out)
{
	switch (cdb[0]) {
	case 0x03: case 0x1a:                   /* REQUEST SENSE, MODE SENSE(6) */
		*out = cdb[4];
		return true;
	case 0x12:                              /* INQUIRY */
		*out = (uint32_t)cdb[3] << 8 | cdb[4];
		return true;
	case 0x25:                              /* READ CAPACITY(10) */
		*out = 8;
		return true;
	case 0x5a: case 0x5e: case 0x37:        /* MODE SENSE(10), PR IN, READ DEFECT DATA(10) */
		*out = (uint32_t)cdb[7] << 8 | cdb[8];
		return true;
	case 0xa0: case 0xa3: case 0xb7:        /* REPORT LUNS, MAINTENANCE IN, READ DEFECT DATA(12) */
		*out = (uint32_t)cdb[6] << 24 | (uint32_t)cdb[7] << 16 | (uint32_t)cdb[8] << 8 | cdb[9];
		return true;
	case 0x9e: case 0x84:                   /* SERVICE ACTION IN(16), RECEIVE COPY RESULTS */
		*out = (uint32_t)cdb[10] << 24 | (uint32_t)cdb[11] << 16 |
		       (uint32_t)cdb[12] << 8 | cdb[13];
		return true;
	default:
		return false;
	}
}

static void cmd_done(struct scsi_cmd *cmd)
{
	struct fz_cmd *fc = cmd->ctx;
	uint32_t end;

	check(fc->ndone == 0, "done called twice", fc);
	fc->ndone++;
	check(cmd->sense_len <= SCSI_SENSE_MAX, "sense longer than SCSI_SENSE_MAX", fc);
	switch (cmd->status) {
	case SCSI_STATUS_GOOD:
		check(cmd->sense_len == 0, "GOOD with sense data", fc);
		break;
	case SCSI_STATUS_CHECK_CONDITION:
		check(cmd->sense_len >= 18 && (cmd->sense[0] & 0x7f) == 0x70 &&
		      cmd->sense[7] + 8u <= cmd->sense_len,
		      "CHECK CONDITION without fixed format sense", fc);
		if ((cmd->sense[2] & 0x0f) == SCSI_SK_ILLEGAL_REQUEST && (cmd->sense[15] & 0x80)) {
			/* a field pointer points into the CDB or the parameter list */
			uint16_t field = (uint16_t)(cmd->sense[16] << 8 | cmd->sense[17]);

			if (cmd->sense[15] & 0x40)
				check(field < cmd->cdb_len, "field pointer past the CDB", fc);
			else
				check(cmd->data_out && field < cmd->buf_len,
				      "field pointer past the parameter list", fc);
		}
		break;
	case SCSI_STATUS_RESERVATION_CONFLICT:
	case SCSI_STATUS_BUSY:
	case SCSI_STATUS_TASK_SET_FULL:
	case SCSI_STATUS_CONDITION_MET:
		check(cmd->sense_len == 0, "sense data without CHECK CONDITION", fc);
		break;
	case SCSI_STATUS_TASK_ABORTED:
		check(fc->aborted && cmd->sense_len == 0, "TASK ABORTED for a command not aborted", fc);
		break;
	default:
		check(false, "unexpected status", fc);
	}
	if (cmd->status == SCSI_STATUS_GOOD && fc->canary && cmd->buf) {
		end = cmd->xfer_len < cmd->buf_len ? cmd->xfer_len : cmd->buf_len;
		/* one memcmp, not a loop the coverage instrumentation traces byte by byte */
		check(memcmp(cmd->buf + end, canary, cmd->buf_len - end) == 0,
		      "data-in written past the length reported", fc);
	}
	if (cmd->status == SCSI_STATUS_GOOD && fc->have_alloc)
		check(cmd->xfer_len <= fc->alloc, "more parameter data than allocated", fc);
	if (cmd->status == SCSI_STATUS_GOOD && fc->have_alloc && cmd->cdb[0] == 0x9e &&
	    (cmd->cdb[1] & 0x1f) == 0x12 && fc->alloc >= 24 && cmd->buf_len >= 24)
		/* GET LBA STATUS: at least the descriptor of the starting LBA (SBC-3 5.6) */
		check(cmd->xfer_len >= 24 && cmd->buf[0] == 0 && cmd->buf[1] == 0 &&
		      (cmd->buf[2] << 8 | cmd->buf[3]) >= 20, "GET LBA STATUS without a descriptor", fc);
	list_del(&fc->link);
	list_add_tail(&fc->link, &fz.done);
}

/* What goes to the medium never comes from a buffer the initiator sent nothing in. */
static void check_write_source(const struct bdev_io *io)
{
	struct list_head *pos;

	list_for_each(pos, &fz.running) {
		struct fz_cmd *fc = list_entry(pos, struct fz_cmd, link);
		uintptr_t lo = (uintptr_t)fc->buf, hi = lo + fc->len;

		if (fc->c.data_out || !fc->buf)
			continue;
		for (int i = 0; i < io->iovcnt; i++) {
			uintptr_t b = (uintptr_t)io->iov[i].iov_base;

			check(b + io->iov[i].iov_len <= lo || b >= hi,
			      "a write of data the initiator did not send", fc);
		}
	}
}

static void free_done(void)
{
	while (!list_empty(&fz.done)) {
		struct fz_cmd *fc = list_first_entry(&fz.done, struct fz_cmd, link);

		list_del(&fc->link);
		free(fc->buf);
		free(fc);
	}
}

static void pump(void)
{
	bool more = true;

	while (more) {
		more = false;
		for (unsigned int l = 0; l < NLU; l++) {
			if (fz.mem[l]->qn) {
				mem_complete(fz.mem[l], 0);
				more = true;
			}
		}
	}
}

/* ------------------------------------------------------------- records */

static void rec_command(uint8_t arg, bool in_flight)
{
	uint8_t flags = take8(), cdb_n = take8() % (SCSI_CDB_MAX + 1);
	unsigned int nx = (arg & 7) % NNEXUS, lun = (arg >> 3) & 7;
	struct fz_cmd *fc;
	uint16_t len, given;

	if (fz.ncmds >= MAX_CMDS) {
		fz.n = 0;
		return;
	}
	fc = calloc(1, sizeof(*fc));
	if (!fc)
		abort();
	for (unsigned int i = 0; i < cdb_n; i++)
		fc->c.cdb[i] = take8();
	fc->c.cdb_len = cdb_n > 16 ? cdb_n : 16;
	len = take16();
	fc->c.itn = &fz.itn[nx];
	fc->c.lun = lun;
	fc->c.lu = lun < NLU ? fz.lu[lun] : NULL;
	fc->c.attr = (flags >> 2) & 7;
	fc->c.data_in = flags & 1;
	fc->c.data_out = flags & 2;
	fc->c.buf_len = len;
	fc->c.done = cmd_done;
	fc->c.ctx = fc;
	fc->nexus = (uint8_t)nx;
	if (len) {
		/* exactly EDTL bytes, as the core's task buffer: overruns are caught */
		fc->len = len;
		fc->c.buf = fc->buf = malloc(len);
		if (!fc->c.buf)
			abort();
		if (fc->c.data_out) {
			given = take16();
			if (given > len)
				given = len;
			if (given > fz.n)
				given = (uint16_t)fz.n;
			memcpy(fc->c.buf, fz.p, given);
			memset(fc->c.buf + given, 0, len - given);
			fz.p += given;
			fz.n -= given;
		} else {
			memset(fc->c.buf, CANARY, len);
			fc->canary = true;
		}
	}
	fc->have_alloc = fc->c.data_in && !fc->c.data_out && alloc_len(fc->c.cdb, &fc->alloc);
	if (!fz.attached[nx]) {
		/* a command through a nexus that logged out: it logs in again first */
		for (unsigned int l = 0; l < NLU; l++)
			scsi_lu_itn_add(fz.lu[l], &fz.itn[nx]);
		fz.attached[nx] = true;
	}
	fz.ncmds++;
	list_add_tail(&fc->link, &fz.running);
	scsi_cmd_submit(&fc->c);
	if (!in_flight)
		pump();
}

/* A reset, CLEAR TASK SET or logout is in force on every node: the core answers it now. */
static void wait_done(void *arg)
{
	struct fz *f = arg;

	if (f->waits == 0)
		abort();        /* called twice, or for a call that said it would not wait */
	f->waits--;
}

static void abort_cmd(struct fz_cmd *fc)
{
	if (fc->aborted)
		return;
	fc->aborted = true;
	scsi_cmd_abort(&fc->c);
}

/* Aborts the running commands of nexus nx (NNEXUS: all) on LU lu (NULL: all). */
static void abort_matching(unsigned int nx, const struct scsi_lu *lu)
{
	struct list_head *pos, *n;

	list_for_each_safe(pos, n, &fz.running) {
		struct fz_cmd *fc = list_entry(pos, struct fz_cmd, link);

		if ((nx == NNEXUS || fc->nexus == nx) && (!lu || fc->c.lu == lu))
			abort_cmd(fc);
	}
}

static void nexus_logout(unsigned int nx)
{
	if (!fz.attached[nx])
		return;
	abort_matching(nx, NULL);
	for (unsigned int l = 0; l < NLU; l++)
		if (scsi_lu_itn_logout_wait(fz.lu[l], &fz.itn[nx], wait_done, &fz))
			fz.waits++;
	for (unsigned int l = 0; l < NLU; l++)
		scsi_lu_itn_remove(fz.lu[l], &fz.itn[nx]);
	fz.attached[nx] = false;
}

static void answer_proposal(unsigned int k, uint8_t how);
static void peer_change(unsigned int l, uint8_t b);

static const char *const dgs[] = { SCSI_ALUA_DG_DEFAULT, "dg2", "dg3" };

enum {
	EV_LU_RESET, EV_TARGET_RESET, EV_CLEAR_TASK_SET, EV_ABORT_TASK_SET, EV_ABORT_TASK,
	EV_LOGOUT, EV_ALUA_SET, EV_ALUA_CONFIGURE, EV_ALUA_ANSWER, EV_POLICY, EV_LEASE,
	EV_MOVE_DG, EV_AWAITS, EV_OFFLINE, EV_CL_ANSWER, EV_CL_PEER, EV_CL_LOCK, EV_GROW,
	EV_ALUA_MAP, EV_PORTS, EV_POLL, EV_N
};

static void rec_event(uint8_t kind)
{
	uint8_t a = take8(), b = take8();
	unsigned int nx = (a & 7) % NNEXUS, l = ((a >> 3) & 3) % NLU;
	struct scsi_alua_update u[3];
	size_t k, nu;

	switch (kind % EV_N) {
	case EV_LU_RESET:
		abort_matching(NNEXUS, fz.lu[l]);
		if (scsi_lu_reset_wait(fz.lu[l], &fz.itn[nx], SCSI_RESET_LU, wait_done, &fz))
			fz.waits++;
		break;
	case EV_TARGET_RESET:
		abort_matching(NNEXUS, NULL);
		for (k = 0; k < NLU; k++)
			if (scsi_lu_reset_wait(fz.lu[k], &fz.itn[nx], b & 1 ? SCSI_RESET_TARGET_COLD :
					       SCSI_RESET_TARGET_WARM, wait_done, &fz))
				fz.waits++;
		break;
	case EV_CLEAR_TASK_SET:
		abort_matching(NNEXUS, fz.lu[l]);
		if (scsi_lu_tasks_cleared_wait(fz.lu[l], &fz.itn[nx], wait_done, &fz))
			fz.waits++;
		break;
	case EV_ABORT_TASK_SET:
		abort_matching(nx, fz.lu[l]);
		break;
	case EV_ABORT_TASK: {
		struct list_head *pos;
		unsigned int i = 0;

		list_for_each(pos, &fz.running) {
			if (i++ == b) {
				abort_cmd(list_entry(pos, struct fz_cmd, link));
				break;
			}
		}
		break;
	}
	case EV_LOGOUT:
		nexus_logout(nx);
		break;
	case EV_ALUA_SET:
		/* the HA agent sets states: b = count and group choice, then states */
		nu = (size_t)(b & 3);
		for (k = 0; k < nu; k++) {
			uint8_t s = take8();

			u[k].tpg_id = (uint16_t)(1 + (s >> 5) % 4);     /* 4: nobody's group */
			u[k].state = s & 0x0f;
			u[k].pref = s & 0x10;
		}
		(void)scsi_alua_set_states(dgs[(b >> 2) % 3], u, nu);
		break;
	case EV_ALUA_CONFIGURE:
		(void)scsi_alua_dg_configure(dgs[(a >> 5) % 3], (uint16_t)(b & 3),
					     (uint8_t)((b >> 2) & 0x0f));
		break;
	case EV_ALUA_ANSWER: {
		/* the policy owner answers a request it was handed (or a stale id) */
		static const int answers[] = { 0, -EAGAIN, -ENOTCONN, -EPERM, -EINVAL };
		uint64_t id = fz.nreq ? fz.req_id[a % fz.nreq] : 1;

		if (b & 0x80)
			id += b & 0x0f;
		(void)scsi_alua_request_done(id, answers[(b >> 4) % 5]);
		break;
	}
	case EV_POLICY:
		scsi_alua_set_policy(a & 1 ? SCSI_ALUA_POLICY_EXTERNAL : SCSI_ALUA_POLICY_LOCAL,
				     3600u * 1000u);
		fz.owner_listens = b & 1;
		break;
	case EV_LEASE:
		switch (a & 7) {
		case 0:
			scsi_alua_lease_configure(b & 1, (uint32_t)(b >> 1) * 100u);
			break;
		case 1:
			(void)scsi_alua_lease_renew(fake_now_ms + (uint64_t)b * 100u);
			break;
		case 2:
			(void)scsi_alua_lease_step_down();
			break;
		default:
			fake_now_ms += (uint64_t)b * 50u;
			break;
		}
		(void)scsi_alua_lease_sync(NULL);
		break;
	case EV_MOVE_DG:
		(void)scsi_lu_set_device_group(fz.lu[l], dgs[b % 3]);
		break;
	case EV_AWAITS:
		fz.mem[l]->awaits = b & 1;
		break;
	case EV_OFFLINE:
		atomic_store(&fz.mem[l]->b.offline, b & 1);
		break;
	case EV_CL_ANSWER:
		if (fz.nprops)
			answer_proposal(a % fz.nprops, b);
		else
			(void)scsi_cluster_done(1 + b, -EIO);   /* nothing by that id here */
		break;
	case EV_CL_PEER:
		peer_change(l, b);     /* LU 2 never has its state in the cluster: refused */
		break;
	case EV_ALUA_MAP: {
		/* the HA agent's map: the states of up to three device groups at once */
		struct scsi_alua_update mu[3][2];
		struct scsi_alua_dg_update m[3];
		size_t nm = (size_t)(a & 3), bad;

		for (k = 0; k < nm; k++) {
			uint8_t c = (b >> (2 * k)) & 3;

			m[k].dg = c == 3 ? "nobody's" : dgs[c];        /* 3: a device group nobody made */
			m[k].n = (size_t)((a >> (2 + k)) & 1) + 1;
			for (size_t j = 0; j < m[k].n; j++) {
				uint8_t v = take8();

				mu[k][j].tpg_id = (uint16_t)(1 + (v >> 5) % 4);
				mu[k][j].state = v & 0x0f;
				mu[k][j].pref = v & 0x10;
			}
			m[k].u = mu[k];
		}
		(void)scsi_alua_set_map(m, nm, &bad);
		break;
	}
	case EV_PORTS: {
		/* a reload's port map: ports move between groups, groups go */
		struct scsi_alua_port pm[4];
		size_t np = 0;

		for (k = 0; k < 4; k++) {
			if (!((b >> k) & 1))
				continue;
			pm[np].rel_port_id = (uint16_t)(k + 1);
			pm[np].tpg_id = (uint16_t)(1 + ((a >> (2 * k)) & 3));
			pm[np].local = k < 2;
			np++;
		}
		(void)scsi_alua_set_ports(pm, np);
		break;
	}
	case EV_POLL:
		scsi_shared_poll();     /* the idle timer of reactor 0 */
		break;
	case EV_GROW:
		mem_grow(fz.mem[l], b & 1 ? 4096 : 512, (b >> 1) & 15);
		break;
	case EV_CL_LOCK:
		if (fz.nlocks)
			(void)scsi_cluster_done(fz.lock_id[a % fz.nlocks], b & 1 ? -EIO : 0);
		break;
	}
}

enum { IO_COMPLETE, IO_FAIL, IO_REFUSE, IO_PUMP, IO_N };

static void rec_io(uint8_t kind)
{
	static const int errs[] = { -EIO, -ENOSPC, -ENOTCONN, -EREMOTEIO, -EOPNOTSUPP, -EINVAL };
	static const uint8_t statuses[] = { SCSI_STATUS_CHECK_CONDITION, SCSI_STATUS_BUSY,
					    SCSI_STATUS_RESERVATION_CONFLICT, 0 };
	uint8_t a = take8();
	struct fz_mem *m = fz.mem[(a & 3) % NLU];

	switch (kind % IO_N) {
	case IO_COMPLETE:
		if (m->qn)
			mem_complete(m, (unsigned int)(a >> 2) % m->qn);
		break;
	case IO_FAIL:
		m->fail_err = errs[(a >> 2) % 6];
		m->fail_status = statuses[(a >> 5) % 4];
		break;
	case IO_REFUSE:
		m->submit_err = errs[(a >> 2) % 6];
		break;
	case IO_PUMP:
		pump();
		break;
	}
}

/* ------------------------------------------------------------ handlers */

static int alua_request(const struct scsi_alua_request *req, void *arg)
{
	(void)arg;
	if (!fz.owner_listens)
		return -ENOTCONN;
	if (fz.nreq < MAX_REQ)
		fz.req_id[fz.nreq++] = req->id;
	return 0;
}

/* The core aborts the tasks by a message to each session's reactor: the next step does. */
static void abort_nexus(struct scsi_lu *lu, const char *iport, uint16_t rel_port, void *arg)
{
	(void)arg;
	if (fz.naborts >= sizeof(fz.aborts) / sizeof(fz.aborts[0])) {
		fz.aborts[fz.naborts - 1].lu = NULL;      /* too many: every nexus's tasks */
		fz.aborts[fz.naborts - 1].every = true;
		return;
	}
	fz.aborts[fz.naborts].lu = lu;
	fz.aborts[fz.naborts].every = iport == NULL;
	snprintf(fz.aborts[fz.naborts].iport, sizeof(fz.aborts[0].iport), "%s", iport ? iport : "");
	fz.aborts[fz.naborts].rel = rel_port;
	fz.naborts++;
}

static void run_aborts(void)
{
	for (unsigned int k = 0; k < fz.naborts; k++) {
		for (unsigned int i = 0; i < NNEXUS; i++) {
			const struct scsi_itn *itn = &fz.itn[i];

			if (!fz.aborts[k].every &&
			    (strcmp(itn->initiator_port, fz.aborts[k].iport) != 0 ||
			     (fz.aborts[k].rel && itn->port->rel_port_id != fz.aborts[k].rel)))
				continue;
			abort_matching(i, fz.aborts[k].lu);
		}
	}
	fz.naborts = 0;
}

/* The HA agent takes a proposal to the cluster (answered by a later record). */
static int propose(const struct scsi_lu_proposal *p, void *arg)
{
	struct fz_prop *q;

	(void)arg;
	if (!fz.agent_listens)
		return -ENOTCONN;
	if (fz.nprops >= MAX_PROPS)
		return -EBUSY;
	q = &props[fz.nprops++];
	q->id = p->id;
	memcpy(q->naa, p->naa, sizeof(q->naa));
	q->wait = p->wait;
	q->st = *p->st;
	q->nev = p->nev;
	memcpy(q->ev, p->ev, p->nev * sizeof(p->ev[0]));
	return 0;
}

static int lba_lock(uint64_t id, const uint8_t naa[16], uint64_t lba, uint32_t blocks, bool lock,
		    void *arg)
{
	(void)naa;
	(void)lba;
	(void)blocks;
	(void)arg;
	if (!lock)
		return 0;       /* a release: the agent forgets the lock */
	if (!fz.locks_listen)
		return -ENOTCONN;
	if (fz.nlocks < MAX_REQ)
		fz.lock_id[fz.nlocks++] = id;
	return 0;
}

static int lu_of_naa(const uint8_t naa[16])
{
	for (int l = 0; l < NLU; l++)
		if (memcmp(scsi_lu_get_params(fz.lu[l])->naa, naa, 16) == 0)
			return l;
	return -1;
}

/* The agent answers proposal k: applied everywhere, overtaken, or failed. */
static void answer_proposal(unsigned int k, uint8_t how)
{
	struct fz_prop *q = &props[k];
	int l = lu_of_naa(q->naa);
	uint64_t id = q->id;

	switch (how % 4) {
	case 0:         /* applied in the cluster's order, then answered */
	case 3:         /* the same, seen by a node that was away (its events only) */
		if (l >= 0)
			(void)scsi_cluster_apply(q->naa, ++fz.version[l], &q->st, true, q->ev, q->nev,
						 how % 4 == 3 ? SCSI_CLUSTER_AWAY : SCSI_CLUSTER_OWN);
		(void)scsi_cluster_done(id, 0);
		break;
	case 1:         /* another change came first: the command runs again */
		(void)scsi_cluster_done(id, -ESTALE);
		break;
	default:
		(void)scsi_cluster_done(id, -EIO);
		break;
	}
	memmove(&props[k], &props[k + 1], (fz.nprops - k - 1) * sizeof(props[0]));
	fz.nprops--;
}

/* Another node's change: a state made of input bytes and events, in the cluster's order. */
static void peer_change(unsigned int l, uint8_t b)
{
	static struct shs_event ev[8];
	struct shs_state *st = &raw_state;
	unsigned int nregs = b & 7, nev = (b >> 3) & 7;
	uint8_t f;

	memset(st, 0, sizeof(*st));
	for (unsigned int i = 0; i < nregs; i++) {
		uint8_t who = take8();

		st->regs[i].key = (uint64_t)take16() << 48 | take8();
		st->regs[i].rel_port = (uint16_t)(1 + (who & 3));
		st->regs[i].all_tg_pt = (who >> 2) & 1;
		snprintf(st->regs[i].iport, sizeof(st->regs[i].iport), "%s",
			 fz.itn[(2 * (who >> 3)) % NNEXUS].initiator_port);
	}
	st->nregs = nregs;
	f = take8();
	st->pr_held = f & 1;
	st->aptpl = (f >> 1) & 1;
	st->r2_held = (f >> 2) & 1;
	st->wce = (f >> 3) & 1;
	st->swp = (f >> 4) & 1;
	st->pr_type = take8();
	st->pr_holder = (int8_t)take8();
	st->pr_generation = take16();
	st->r2_rel_port = (uint16_t)(1 + (f >> 5) % 3);
	snprintf(st->r2_iport, sizeof(st->r2_iport), "%s", fz.itn[(f >> 6) % NNEXUS].initiator_port);
	memset(ev, 0, sizeof(ev));
	for (unsigned int i = 0; i < nev; i++) {
		uint8_t k = take8();

		ev[i].kind = (uint8_t)(1 + (k & 1));
		ev[i].flags = (k >> 1) & 7;
		ev[i].asc = take16();
		ev[i].rel_port = (uint16_t)((k >> 4) & 3);
		snprintf(ev[i].iport, sizeof(ev[i].iport), "%s", k & 0x40 ? "" :
			 fz.itn[(k >> 7) * 2].initiator_port);
	}
	(void)scsi_cluster_apply(scsi_lu_get_params(fz.lu[l])->naa, ++fz.version[l], st, b & 0x40,
				 ev, nev, 0);
}

/* ------------------------------------------------------------ lifecycle */

static void setup(uint8_t cfg, uint8_t cfg2)
{
	static const struct scsi_alua_port map[] = {
		{ 1, 1, true }, { 2, 2, true }, { 3, 3, false },
	};
	unsigned int i, l;

	memset(&fz, 0, sizeof(fz));
	list_init(&fz.running);
	list_init(&fz.done);
	fake_now_ms = 1000000;
	fz.cluster = cfg2 & 1;
	fz.agent_listens = cfg2 & 2;
	fz.locks_listen = cfg2 & 4;
	scsi_alua_reset();
	if (scsi_alua_set_ports(map, 3))
		abort();
	scsi_alua_set_policy(cfg & 1 ? SCSI_ALUA_POLICY_EXTERNAL : SCSI_ALUA_POLICY_LOCAL,
			     3600u * 1000u);
	fz.owner_listens = cfg & 2;
	if (cfg & 4)
		scsi_alua_lease_configure(true, 2000);
	if (cfg & 0x18)
		(void)scsi_alua_dg_configure(SCSI_ALUA_DG_DEFAULT, (uint16_t)((cfg >> 3) & 3),
					     (uint8_t)(1 + ((cfg >> 5) % 3)));

	for (l = 0; l < NLU; l++) {
		struct scsi_lu_params p;
		uint32_t bs = l == 2 ? 4096 : 512;
		uint64_t size = l == 2 ? 16 * 4096 : 64 * 512;
		struct fz_mem *m = calloc(1, sizeof(*m));

		if (l == 2 && (cfg2 & 8))
			size = 0;       /* its backend not reached yet: geometry unknown, offline */
		if (!m || !(m->data = calloc(1, size ? size : 1)))
			abort();
		atomic_store(&m->b.offline, size == 0);
		m->b.ops = &mem_ops;
		m->b.info.size_bytes = size;
		m->b.info.block_size = bs;
		m->b.info.unmap_supported = true;
		snprintf(m->b.name, sizeof(m->b.name), "mem%u", l);
		fz.mem[l] = m;

		memset(&p, 0, sizeof(p));
		p.lun = l;
		snprintf(p.vendor, sizeof(p.vendor), "ISERGW");
		snprintf(p.product, sizeof(p.product), "fuzz lun %u", l);
		snprintf(p.revision, sizeof(p.revision), "0001");
		snprintf(p.serial, sizeof(p.serial), "FUZZ-%04u", l);
		p.naa[0] = 0x60;
		for (i = 1; i < 16; i++)
			p.naa[i] = (uint8_t)(0x10 * l + i);
		p.write_cache = !(cfg & 0x80) || l != 0;
		p.thin = l != 1 || !(cfg & 0x80);
		p.readonly = false;
		p.max_xfer_bytes = l == 2 ? 32768 : 0;
		snprintf(p.alua_dg, sizeof(p.alua_dg), "%s", l == 2 ? "dg2" : "");
		p.cluster_state = fz.cluster && l < 2;
		if (scsi_lu_create(&p, &m->b, &fz.lu[l]))
			abort();
	}
	for (i = 0; i < NNEXUS; i++) {
		struct scsi_itn *itn = &fz.itn[i];
		unsigned int ini = i / NPORT;

		itn->id = i + 1;
		snprintf(itn->initiator_name, sizeof(itn->initiator_name), "%s", initiators[ini]);
		snprintf(itn->initiator_port, sizeof(itn->initiator_port), "%s,i,0x%s",
			 initiators[ini], isids[ini]);
		itn->port = &ports[i % NPORT];
		itn->luns = fz.lu;
		itn->nluns = NLU;
		for (l = 0; l < NLU; l++)
			scsi_lu_itn_add(fz.lu[l], itn);
		fz.attached[i] = true;
	}
}

/* Drained: nothing runs, nothing is held, no I/O is queued. */
static bool quiet(void)
{
	for (unsigned int l = 0; l < NLU; l++)
		if (fz.mem[l]->qn)
			return false;
	return list_empty(&fz.running) && !fz.nprops && !fz.waits && !scsi_alua_requests_held() &&
	       !scsi_cluster_held();
}

static void teardown(void)
{
	unsigned int l;

	if (!list_empty(&fz.running)) {
		struct fz_cmd *fc = list_first_entry(&fz.running, struct fz_cmd, link);

		check(false, "a command never completed", fc);
	}
	free_done();
	if (!quiet())
		abort();        /* a held request or an I/O nothing finishes */
	for (l = 0; l < NLU; l++) {
		scsi_lu_destroy(fz.lu[l]);
		if (fz.mem[l]->listener)
			abort();        /* the LU forgot to stop listening */
		free(fz.mem[l]->data);
		free(fz.mem[l]);
	}
	scsi_alua_reset();
}

/*
 * One step on the reactor: a record, or a round of draining at the end.
 * Each step is a message to the reactor, so that the messages the records
 * caused (answers to held commands) run in between, and the deferred calls
 * after each.
 */
static void step(void *arg);

static void next_step(void)
{
	if (reactor_send_msg(fz.r, step, NULL))
		abort();
}

static void step(void *arg)
{
	uint8_t b0;

	(void)arg;
	free_done();
	run_aborts();
	if (fz.n && fz.nrec < MAX_RECORDS) {
		fz.nrec++;
		b0 = take8();
		switch (b0 >> 6) {
		case 0:
		case 1:
			rec_command(b0 & 0x3f, b0 >> 6);
			break;
		case 2:
			rec_event(b0 & 0x3f);
			break;
		default:
			rec_io(b0 & 0x3f);
			break;
		}
		next_step();
		return;
	}
	/*
	 * The end: abort what runs (as a connection drop does), refuse what
	 * waits for the agent, complete the I/O; once quiet the nexuses go
	 * (a SCSI-2 holder's release may be one more proposal), then the LUs.
	 */
	abort_matching(NNEXUS, NULL);
	while (fz.nprops)
		answer_proposal(0, 2);
	for (unsigned int i = 0; i < fz.nlocks; i++)
		(void)scsi_cluster_done(fz.lock_id[i], -EIO);
	fz.nlocks = 0;
	pump();
	if (quiet() && !fz.logged_out) {
		for (unsigned int i = 0; i < NNEXUS; i++)
			for (unsigned int l = 0; l < NLU && fz.attached[i]; l++)
				scsi_lu_itn_remove(fz.lu[l], &fz.itn[i]);
		fz.logged_out = true;
	}
	if ((!quiet() || !fz.logged_out) && fz.drain++ < DRAIN_ROUNDS) {
		next_step();    /* held commands finish after this batch */
		return;
	}
	teardown();
	fz.finished = true;
	reactor_stop(fz.r);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* the errors of the backstore failures the input asks for go to stderr: closed */
	memset(canary, CANARY, sizeof(canary));
	report_fd = dup(2);
	if (report_fd < 0)
		report_fd = 2;
	gw_log_set_level(GW_LOG_ERR);
	scsi_alua_lease_set_clock(fake_clock);
	scsi_alua_set_request_handler(alua_request, NULL);
	scsi_set_abort_nexus_handler(abort_nexus, NULL);
	scsi_cluster_set_handler(propose, NULL);
	scsi_cluster_set_lock_handler(lba_lock, NULL);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reactor *r;

	if (size < 2)
		return 0;
	if (reactor_create(0, &r))
		abort();
	setup(data[0], data[1]);
	fz.r = r;
	fz.p = data + 2;
	fz.n = size - 2;
	next_step();
	reactor_run(r);
	if (!fz.finished)
		abort();
	reactor_destroy(r);
	return 0;
}
