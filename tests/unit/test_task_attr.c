// LINK: gw_proto
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the task scheduler of core/task.c (SAM-5 task attributes):
 * task.c is compiled into this program with its neighbours faked (SPDK
 * conn_ut style). The SCSI layer holds every submitted command until a test
 * completes it (or completes it at once, sync_scsi); responses are "sent"
 * at once and recorded; reactor_defer() queues work that run_deferred()
 * runs, as the reactor would after an event batch.
 *
 * Every attribute mix (SIMPLE, untagged, ORDERED, HEAD OF QUEUE, ACA,
 * reserved) with 0, 1, 2 and many held tasks, writes still collecting data,
 * commands out of CmdSN order and immediate ones, LUNs apart; and ABORT
 * TASK, ABORT TASK SET, CLEAR TASK SET, LOGICAL UNIT RESET, TARGET WARM and
 * COLD RESET, a Logout and a dropped connection with tasks held: every task
 * runs or is aborted, each once, none is left (ntasks and the connection
 * references return to their start), and the scheduler returns (a watchdog
 * fails the program if it spins).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../gateway/core/task.c"

#define WATCHDOG_S 20
#define MAX_CMDS 4096

/* ---------------- fakes of task.c's neighbours ---------------- */

static int warnings;

void gw_log(enum gw_log_level lvl, const char *comp, const char *fmt, ...)
{
	(void)comp;
	(void)fmt;
	if (lvl <= GW_LOG_WARN)
		warnings++;
}

uint64_t gw_counters_now_us(void)
{
	return 0;
}

void gw_counters_done(struct gw_io_counters *sess, const struct gw_io_done *d)
{
	(void)sess;
	(void)d;
}

void gw_free_after_reactors(struct gw *gw, void (*fn)(void *), void *arg)
{
	(void)gw;
	fn(arg);
}

void iscsi_sessions_foreach(struct gw *gw, void (*fn)(struct iscsi_conn *c, void *arg), void *arg)
{
	(void)gw;
	(void)fn;
	(void)arg;
}

void iscsi_conn_get(struct iscsi_conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void iscsi_conn_put(struct iscsi_conn *c)
{
	assert_true(atomic_fetch_sub(&c->refs, 1) > 0);
}

uint32_t iscsi_conn_max_cmd_sn(const struct iscsi_conn *c)
{
	return c->sess->exp_cmd_sn + MAX_CMDS;
}

struct iscsi_tx_pdu *iscsi_tx_pdu_alloc(void)
{
	return calloc(1, sizeof(struct iscsi_tx_pdu));
}

void iscsi_tx_pdu_free(struct iscsi_tx_pdu *pdu)
{
	free(pdu);
}

/* What the target sent: SCSI Responses, TMF Responses, R2Ts, Rejects. */
struct sent {
	uint8_t op;
	uint32_t itt;
	uint8_t status;         /* SCSI status or TMF response */
	uint8_t asc;
	uint32_t ttt;           /* R2T */
};
static struct sent sent[4 * MAX_CMDS];
static unsigned nsent, rejects, drops;

int iscsi_conn_send(struct iscsi_conn *c, struct iscsi_tx_pdu *pdu, bool advance_stat_sn)
{
	struct sent *s = &sent[nsent++];

	(void)c;
	(void)advance_stat_sn;
	assert_true(nsent < sizeof(sent) / sizeof(sent[0]));
	s->op = iscsi_bhs_opcode(&pdu->bhs);
	s->itt = be32toh(pdu->bhs.itt);
	if (s->op == ISCSI_OP_SCSI_RSP) {
		s->status = ((struct iscsi_scsi_rsp *)&pdu->bhs)->status;
		s->asc = pdu->data_len >= 2 + 14 ? pdu->data[2 + 12] : 0;
	} else if (s->op == ISCSI_OP_TASK_MGMT_RSP) {
		s->status = ((struct iscsi_tmf_rsp *)&pdu->bhs)->response;
	} else if (s->op == ISCSI_OP_R2T) {
		s->ttt = be32toh(((struct iscsi_r2t *)&pdu->bhs)->ttt);
	}
	if (pdu->sent)
		pdu->sent(pdu, 0);
	else
		iscsi_tx_pdu_free(pdu);
	return 0;
}

void iscsi_conn_reject(struct iscsi_conn *c, const struct iscsi_bhs *bad, uint8_t reason)
{
	(void)c;
	(void)bad;
	(void)reason;
	rejects++;
}

void iscsi_conn_drop(struct iscsi_conn *c, const char *why)
{
	(void)c;
	(void)why;
	drops++;
}

bool iscsi_conn_log_room(struct iscsi_conn *c)
{
	(void)c;
	return true;
}

/* reactor: deferred work runs when the test says */
static struct list_head deferred = LIST_HEAD_INIT(deferred);
static unsigned deferred_runs;

void reactor_deferred_init(struct reactor_deferred *d, reactor_fn cb, void *arg)
{
	d->cb = cb;
	d->arg = arg;
	d->pending = false;
	list_init(&d->link);
}

void reactor_defer(struct reactor *r, struct reactor_deferred *d)
{
	(void)r;
	if (d->pending)
		return;
	d->pending = true;
	list_add_tail(&d->link, &deferred);
}

void reactor_deferred_cancel(struct reactor *r, struct reactor_deferred *d)
{
	(void)r;
	if (d->pending) {
		list_del(&d->link);
		d->pending = false;
	}
}

/* Run the deferred work to quiescence, as the reactor does after a batch. */
static void run_deferred(void)
{
	while (!list_empty(&deferred)) {
		struct reactor_deferred *d = list_first_entry(&deferred, struct reactor_deferred, link);

		list_del(&d->link);
		d->pending = false;
		d->cb(d->arg);
		assert_true(++deferred_runs < 100000); /* a scheduler that never settles */
	}
}

/* SCSI layer: holds every command until completed, unless sync_scsi */
static uint32_t submitted[MAX_CMDS]; /* ITTs, in submission order */
static unsigned nsubmitted, aborts;
static bool sync_scsi;

void scsi_cmd_submit(struct scsi_cmd *cmd)
{
	assert_true(nsubmitted < MAX_CMDS);
	submitted[nsubmitted++] = ((struct iscsi_task *)cmd->ctx)->itt;
	cmd->status = SCSI_STATUS_GOOD;
	cmd->xfer_len = 0;
	if (sync_scsi)
		cmd->done(cmd);
}

void scsi_cmd_abort(struct scsi_cmd *cmd)
{
	(void)cmd;
	aborts++;
}

void scsi_cmd_set_sense(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq)
{
	cmd->status = SCSI_STATUS_CHECK_CONDITION;
	memset(cmd->sense, 0, 18);
	cmd->sense[0] = 0x70;
	cmd->sense[2] = key;
	cmd->sense[7] = 10;
	cmd->sense[12] = asc;
	cmd->sense[13] = ascq;
	cmd->sense_len = 18;
}

bool scsi_lu_reset_wait(struct scsi_lu *lu, const struct scsi_itn *from, enum scsi_reset_kind kind,
			scsi_reset_done_fn done, void *arg)
{
	(void)lu;
	(void)from;
	(void)kind;
	(void)done;
	(void)arg;
	return false;
}

bool scsi_lu_tasks_cleared_wait(struct scsi_lu *lu, const struct scsi_itn *from,
				scsi_reset_done_fn done, void *arg)
{
	(void)lu;
	(void)from;
	(void)done;
	(void)arg;
	return false;
}

static struct scsi_lu_params lu_params;

const struct scsi_lu_params *scsi_lu_get_params(const struct scsi_lu *lu)
{
	(void)lu;
	return &lu_params;
}

size_t scsi_lu_dg_index(const struct scsi_lu *lu)
{
	(void)lu;
	return 0;
}

void scsi_set_abort_nexus_handler(scsi_abort_nexus_fn fn, void *arg)
{
	(void)fn;
	(void)arg;
}

/* datamover: buffers from the heap, R2Ts through the core */
static int dm_buf_get(struct iscsi_conn *c, struct iscsi_task *t)
{
	(void)c;
	t->buf = calloc(1, t->edtl);
	t->buf_len = t->edtl;
	return t->buf ? 0 : -ENOMEM;
}

static void dm_buf_put(struct iscsi_conn *c, struct iscsi_task *t)
{
	(void)c;
	free(t->buf);
	t->buf = NULL;
}

static void dm_release_task(struct iscsi_conn *c, struct iscsi_task *t)
{
	(void)c;
	(void)t;
}

static int dm_get_data(struct iscsi_conn *c, struct iscsi_task *t)
{
	(void)c;
	return iscsi_task_send_r2ts(t);
}

static int dm_put_data(struct iscsi_conn *c, struct iscsi_task *t)
{
	(void)c;
	iscsi_task_send_response(t);
	return 0;
}

static const struct gw_dm_ops fake_dm = {
	.name = "fake",
	.buf_get = dm_buf_get,
	.buf_put = dm_buf_put,
	.release_task = dm_release_task,
	.get_data = dm_get_data,
	.put_data = dm_put_data,
};

/* ---------------- a logged-in session with LUNs 0..3 ---------------- */

static struct gw gw;
static struct gw_target target;
static struct scsi_lu *luns[4];
static char lu_mem[4];
static struct iscsi_conn *conn;
static struct iscsi_session *sess;
static uint32_t next_itt, next_sn;

static void watchdog(int sig)
{
	static const char msg[] = "test_task_attr: the scheduler did not return within "
				  "the watchdog (a task spinning)\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static int setup(void **state)
{
	(void)state;
	for (int i = 0; i < 4; i++)
		luns[i] = (struct scsi_lu *)(void *)&lu_mem[i];
	target.luns = luns;
	target.nluns = 4;
	conn = calloc(1, sizeof(*conn));
	sess = calloc(1, sizeof(*sess));
	conn->gw = &gw;
	conn->dm = &fake_dm;
	conn->state = CONN_STATE_FFP;
	conn->reactor = (struct reactor *)(void *)&gw;
	atomic_init(&conn->refs, 1);
	snprintf(conn->peer, sizeof(conn->peer), "test");
	list_init(&conn->tasks);
	list_init(&conn->tmfs);
	conn->sess = sess;
	sess->conn = conn;
	sess->reactor = conn->reactor;
	sess->target = &target;
	sess->params.immediate_data = true;
	sess->params.initial_r2t = true;
	sess->params.first_burst = 65536;
	sess->params.max_burst = 262144;
	sess->params.max_outstanding_r2t = 1;
	sess->exp_cmd_sn = 1;
	list_init(&sess->pending);
	iscsi_task_sets_init(sess);
	next_itt = 0x100;
	next_sn = 1;
	nsent = nsubmitted = aborts = rejects = drops = 0;
	warnings = 0;
	deferred_runs = 0;
	sync_scsi = false;
	alarm(WATCHDOG_S);
	return 0;
}

/* Nothing left: no task, no set, no deferred work, references as at the start. */
static int teardown(void **state)
{
	(void)state;
	run_deferred();
	assert_int_equal(conn->ntasks, 0);
	assert_true(list_empty(&conn->tasks));
	assert_true(list_empty(&conn->tmfs));
	assert_true(list_empty(&sess->task_sets));
	assert_true(list_empty(&sess->pending));
	assert_int_equal(atomic_load(&conn->refs), 1);
	iscsi_task_sets_fini(sess);
	assert_true(list_empty(&deferred));
	alarm(0);
	free(sess);
	free(conn);
	return 0;
}

/* ---------------- driving it ---------------- */

enum { SIMPLE = 1, ORDERED = 2, HOQ = 3, ACA = 4, UNTAGGED = 0 };
enum kind { TUR, READ, WRITE_DATA, WRITE_R2T };

/* A SCSI Command PDU: attribute attr on lun, CmdSN sn (0: the next one). Returns its ITT. */
static uint32_t cmd_sn(uint8_t attr, uint64_t lun, enum kind k, uint32_t sn, bool immediate)
{
	struct iscsi_scsi_cmd h;
	uint8_t data[512];
	uint32_t dlen = 0, itt = next_itt++;

	memset(&h, 0, sizeof(h));
	memset(data, 0xa5, sizeof(data));
	h.opcode = ISCSI_OP_SCSI_CMD | (immediate ? ISCSI_OP_IMMEDIATE : 0);
	h.flags = ISCSI_FLAG_FINAL | attr;
	h.lun[1] = (uint8_t)lun;
	h.itt = htobe32(itt);
	h.cmd_sn = htobe32(sn ? sn : immediate ? next_sn : next_sn++);
	if (k == READ) {
		h.flags |= ISCSI_CMD_READ;
		h.exp_xfer_len = htobe32(512);
		h.cdb[0] = 0x28;
	} else if (k == WRITE_DATA || k == WRITE_R2T) {
		h.flags |= ISCSI_CMD_WRITE;
		h.exp_xfer_len = htobe32(512);
		h.cdb[0] = 0x2a;
		dlen = k == WRITE_DATA ? 512 : 0;
	}
	assert_int_equal(iscsi_task_scsi_cmd(conn, (struct iscsi_bhs *)&h, NULL, 0,
					     dlen ? data : NULL, dlen), 0);
	return itt;
}

static uint32_t cmd(uint8_t attr, enum kind k)
{
	return cmd_sn(attr, 0, k, 0, false);
}

static struct iscsi_task *task_of(uint32_t itt)
{
	return task_find(conn, htobe32(itt));
}

/* Submitted to the SCSI layer (ever). */
static bool ran(uint32_t itt)
{
	for (unsigned i = 0; i < nsubmitted; i++)
		if (submitted[i] == itt)
			return true;
	return false;
}

static const struct sent *response(uint32_t itt)
{
	const struct sent *r = NULL;

	for (unsigned i = 0; i < nsent; i++) {
		if (sent[i].op == ISCSI_OP_SCSI_RSP && sent[i].itt == itt) {
			assert_null(r); /* one response per task */
			r = &sent[i];
		}
	}
	return r;
}

static const struct sent *tmf_response(uint32_t itt)
{
	for (unsigned i = 0; i < nsent; i++)
		if (sent[i].op == ISCSI_OP_TASK_MGMT_RSP && sent[i].itt == itt)
			return &sent[i];
	return NULL;
}

/* The SCSI layer completes itt (it must be running there). */
static void complete(uint32_t itt)
{
	struct iscsi_task *t = task_of(itt);

	assert_non_null(t);
	assert_int_equal(t->state, TASK_STATE_EXEC);
	t->scsi.done(&t->scsi);
}

/* Complete itt and let the reactor run what that released. */
static void finish(uint32_t itt)
{
	complete(itt);
	run_deferred();
}

static bool held(uint32_t itt)
{
	struct iscsi_task *t = task_of(itt);

	return t && t->state == TASK_STATE_WAIT_ORDER;
}

static bool running(uint32_t itt)
{
	struct iscsi_task *t = task_of(itt);

	return t && t->state == TASK_STATE_EXEC && ran(itt);
}

/* The Data-Out answering the last R2T of itt. */
static void data_out(uint32_t itt)
{
	struct iscsi_data_out h;
	uint8_t data[512];
	uint32_t ttt = ISCSI_RSVD_TAG;

	for (unsigned i = 0; i < nsent; i++)
		if (sent[i].op == ISCSI_OP_R2T && sent[i].itt == itt)
			ttt = sent[i].ttt;
	assert_int_not_equal(ttt, ISCSI_RSVD_TAG);
	memset(&h, 0, sizeof(h));
	memset(data, 0x5a, sizeof(data));
	h.opcode = ISCSI_OP_DATA_OUT;
	h.flags = ISCSI_FLAG_FINAL;
	h.itt = htobe32(itt);
	h.ttt = htobe32(ttt);
	iscsi_task_data_out(conn, &h, data, sizeof(data));
}

static uint32_t tmf(uint8_t func, uint32_t ref_itt, uint64_t lun)
{
	struct iscsi_tmf_req r;
	uint32_t itt = next_itt++;

	memset(&r, 0, sizeof(r));
	r.opcode = ISCSI_OP_TASK_MGMT_REQ | ISCSI_OP_IMMEDIATE;
	r.function = 0x80 | func;
	r.lun[1] = (uint8_t)lun;
	r.itt = htobe32(itt);
	r.ref_task_tag = htobe32(ref_itt);
	r.cmd_sn = htobe32(next_sn);
	iscsi_task_tmf(conn, &r);
	return itt;
}

static void assert_good(uint32_t itt)
{
	const struct sent *r = response(itt);

	assert_non_null(r);
	assert_int_equal(r->status, SCSI_STATUS_GOOD);
}

/* ---------------- no task held ---------------- */

static void test_simple_only(void **state)
{
	uint32_t a = cmd(SIMPLE, READ), b = cmd(UNTAGGED, READ), c = cmd(SIMPLE, WRITE_DATA);

	(void)state;
	assert_true(running(a) && running(b) && running(c));
	finish(b);
	finish(c);
	finish(a);
	assert_good(a);
	assert_good(b);
	assert_good(c);
	assert_int_equal(deferred_runs, 0); /* nothing held, nothing scheduled */
}

static void test_ordered_alone_runs(void **state)
{
	uint32_t o = cmd(ORDERED, READ);

	(void)state;
	assert_true(running(o));
	finish(o);
	assert_good(o);
}

/* ---------------- ORDERED ---------------- */

/* The reactor hang: ORDERED READ, then two SIMPLE READs. */
static void test_ordered_then_two_simple(void **state)
{
	uint32_t o = cmd(ORDERED, READ), s1 = cmd(SIMPLE, READ), s2 = cmd(SIMPLE, READ);

	(void)state;
	assert_true(running(o));
	assert_true(held(s1) && held(s2));
	finish(o);
	assert_good(o);
	assert_true(running(s1) && running(s2));
	finish(s2);
	finish(s1);
	assert_good(s1);
	assert_good(s2);
}

static void test_ordered_waits_for_older(void **state)
{
	uint32_t a = cmd(SIMPLE, READ), b = cmd(SIMPLE, READ);
	uint32_t o = cmd(ORDERED, READ), c = cmd(SIMPLE, READ);

	(void)state;
	assert_true(running(a) && running(b));
	assert_true(held(o) && held(c));
	finish(b);
	assert_true(held(o) && held(c));
	finish(a);
	assert_true(running(o));
	assert_true(held(c)); /* behind the ORDERED one */
	finish(o);
	assert_true(running(c));
	finish(c);
	assert_good(c);
}

static void test_two_ordered_in_a_row(void **state)
{
	uint32_t o1 = cmd(ORDERED, READ), o2 = cmd(ORDERED, READ), s = cmd(SIMPLE, READ);

	(void)state;
	assert_true(running(o1) && held(o2) && held(s));
	finish(o1);
	assert_true(running(o2) && held(s));
	finish(o2);
	assert_true(running(s));
	finish(s);
}

/* Many held: ORDERED, 100 SIMPLE, ORDERED, 100 SIMPLE, each batch released at once. */
static void test_many_held(void **state)
{
	uint32_t o1, o2, a[100], b[100];

	(void)state;
	o1 = cmd(ORDERED, READ);
	for (int i = 0; i < 100; i++)
		a[i] = cmd(SIMPLE, READ);
	o2 = cmd(ORDERED, READ);
	for (int i = 0; i < 100; i++)
		b[i] = cmd(i % 2 ? SIMPLE : UNTAGGED, READ);
	assert_true(running(o1));
	finish(o1);
	for (int i = 0; i < 100; i++)
		assert_true(running(a[i]) && held(b[i]));
	assert_true(held(o2));
	for (int i = 99; i > 0; i--)
		finish(a[i]);
	assert_true(held(o2));
	finish(a[0]);
	assert_true(running(o2));
	for (int i = 0; i < 100; i++)
		assert_true(held(b[i]));
	finish(o2);
	for (int i = 0; i < 100; i++)
		assert_true(running(b[i]));
	for (int i = 0; i < 100; i++)
		finish(b[i]);
	assert_int_equal(nsubmitted, 202);
	for (int i = 0; i < 100; i++)
		assert_good(b[i]);
}

/* 1000 ORDERED commands the SCSI layer completes at once, held behind one it does not. */
static void test_ordered_chain_sync(void **state)
{
	uint32_t first = cmd(ORDERED, READ), last = 0;

	(void)state;
	for (int i = 0; i < 1000; i++)
		last = cmd(ORDERED, TUR);
	assert_true(held(last));
	sync_scsi = true;
	finish(first);
	assert_good(last);
	assert_int_equal(nsubmitted, 1001);
}

/* ---------------- HEAD OF QUEUE ---------------- */

static void test_hoq_runs_at_once(void **state)
{
	uint32_t o = cmd(ORDERED, READ), s = cmd(SIMPLE, READ), h = cmd(HOQ, TUR);
	uint32_t s2 = cmd(SIMPLE, READ), h2 = cmd(HOQ, READ), s3 = cmd(SIMPLE, READ);

	(void)state;
	assert_true(running(o) && running(h) && running(h2));
	assert_true(held(s) && held(s2) && held(s3));
	/* s is older than both HEAD OF QUEUE tasks: the ORDERED one alone holds it */
	finish(o);
	assert_true(running(s));
	assert_true(held(s2) && held(s3)); /* the first HEAD OF QUEUE task is older */
	finish(h);
	assert_true(running(s2));
	assert_true(held(s3)); /* the second one is older than s3 only */
	finish(h2);
	assert_true(running(s3));
	finish(s);
	finish(s2);
	finish(s3);
	assert_good(h);
}

/* An ORDERED task waits for an older HEAD OF QUEUE one. */
static void test_ordered_behind_hoq(void **state)
{
	uint32_t h = cmd(HOQ, READ), o = cmd(ORDERED, READ);

	(void)state;
	assert_true(running(h) && held(o));
	finish(h);
	assert_true(running(o));
	finish(o);
}

/* ---------------- ACA, reserved ---------------- */

static void test_aca_refused(void **state)
{
	uint32_t o = cmd(ORDERED, READ), a = cmd(ACA, TUR), s = cmd(SIMPLE, READ);
	const struct sent *r;

	(void)state;
	r = response(a);
	assert_non_null(r); /* at once, not held behind the ORDERED task */
	assert_int_equal(r->status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(r->asc, 0x49);
	assert_false(ran(a));
	assert_int_equal(warnings, 1);
	assert_true(held(s));
	finish(o);
	finish(s);
}

static void test_reserved_attr_is_ordered(void **state)
{
	uint32_t s = cmd(SIMPLE, READ), r = cmd(5, READ), r2 = cmd(7, READ), s2 = cmd(SIMPLE, READ);

	(void)state;
	assert_true(running(s) && held(r) && held(r2) && held(s2));
	assert_int_equal(warnings, 1); /* once per session */
	finish(s);
	assert_true(running(r) && held(r2));
	finish(r);
	assert_true(running(r2) && held(s2));
	finish(r2);
	finish(s2);
}

/* ---------------- what "older" means ---------------- */

/* Each LUN has its own task set. */
static void test_luns_apart(void **state)
{
	uint32_t o = cmd_sn(ORDERED, 0, READ, 0, false), s1 = cmd_sn(SIMPLE, 1, READ, 0, false);
	uint32_t o1 = cmd_sn(ORDERED, 1, READ, 0, false), s0 = cmd_sn(SIMPLE, 0, READ, 0, false);

	(void)state;
	assert_true(running(o) && running(s1) && held(o1) && held(s0));
	finish(s1);
	assert_true(running(o1) && held(s0));
	finish(o);
	assert_true(running(s0));
	finish(o1);
	finish(s0);
}

/* A write still collecting its data is in the task set: an ORDERED READ waits for it. */
static void test_ordered_waits_for_write_data(void **state)
{
	uint32_t w = cmd(SIMPLE, WRITE_R2T), o = cmd(ORDERED, READ), s = cmd(SIMPLE, READ);

	(void)state;
	assert_false(ran(w));
	assert_true(held(o) && held(s));
	data_out(w);
	assert_true(running(w) && held(o));
	finish(w);
	assert_true(running(o) && held(s));
	finish(o);
	finish(s);
	assert_good(w);
}

/* An ORDERED WRITE waiting for data holds the SIMPLE READ behind it until it completed. */
static void test_ordered_write_then_read(void **state)
{
	uint32_t w = cmd(ORDERED, WRITE_R2T), r = cmd(SIMPLE, READ), w2 = cmd(ORDERED, WRITE_DATA);

	(void)state;
	assert_true(held(r) && held(w2));
	data_out(w);
	assert_true(running(w) && held(r) && held(w2));
	finish(w);
	assert_true(running(r) && held(w2));
	finish(r);
	assert_true(running(w2));
	finish(w2);
}

/* Age is CmdSN order, not arrival order. */
static void test_cmdsn_order(void **state)
{
	uint32_t o, s3, s1;

	(void)state;
	o = cmd_sn(ORDERED, 0, READ, 2, false);
	s3 = cmd_sn(SIMPLE, 0, READ, 3, false);
	assert_false(ran(o) || ran(s3)); /* waiting for CmdSN 1 */
	s1 = cmd_sn(SIMPLE, 0, READ, 1, false);
	next_sn = 4;
	assert_true(running(s1) && held(o) && held(s3));
	finish(s1);
	assert_true(running(o) && held(s3));
	finish(o);
	assert_true(running(s3));
	finish(s3);
}

/* An immediate command enters the set when it arrives. */
static void test_immediate(void **state)
{
	uint32_t o = cmd(ORDERED, READ), i = cmd_sn(SIMPLE, 0, READ, 0, true);
	uint32_t h = cmd_sn(HOQ, 0, TUR, 0, true);

	(void)state;
	assert_true(running(o) && held(i) && running(h));
	finish(o);
	finish(h);
	assert_true(running(i));
	finish(i);
}

/*
 * A bidirectional command (refused: 05/24/00) whose CmdSN is ahead of a gap
 * is refused when its CmdSN comes up, not before: its CmdSN is consumed in
 * order and the commands after it run.
 */
static void test_bidi_out_of_order(void **state)
{
	struct iscsi_scsi_cmd h;
	uint8_t data[512];
	uint32_t bidi = next_itt++, first, after;

	(void)state;
	memset(&h, 0, sizeof(h));
	memset(data, 0, sizeof(data));
	h.opcode = ISCSI_OP_SCSI_CMD;
	h.flags = ISCSI_FLAG_FINAL | ISCSI_CMD_READ | ISCSI_CMD_WRITE | SIMPLE;
	h.itt = htobe32(bidi);
	h.exp_xfer_len = htobe32(512);
	h.cmd_sn = htobe32(2);
	h.cdb[0] = 0x2a;
	assert_int_equal(iscsi_task_scsi_cmd(conn, (struct iscsi_bhs *)&h, NULL, 0, data, 512), 0);
	after = cmd_sn(SIMPLE, 0, READ, 3, false);
	assert_false(ran(after));
	first = cmd_sn(SIMPLE, 0, READ, 1, false);
	next_sn = 4;
	assert_true(running(first));
	assert_non_null(response(bidi));
	assert_int_equal(response(bidi)->status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(response(bidi)->asc, 0x24);
	assert_false(ran(bidi));
	assert_true(running(after));
	assert_int_equal(sess->exp_cmd_sn, 4);
	assert_int_equal(sess->npending, 0);
	finish(first);
	finish(after);
}

/* ---------------- task management ---------------- */

static void test_abort_held_task(void **state)
{
	uint32_t o = cmd(ORDERED, READ), s1 = cmd(SIMPLE, READ), s2 = cmd(SIMPLE, READ);
	uint32_t t;

	(void)state;
	t = tmf(ISCSI_TMF_ABORT_TASK, s1, 0);
	assert_non_null(tmf_response(t));
	assert_int_equal(tmf_response(t)->status, ISCSI_TMF_RSP_COMPLETE);
	assert_null(task_of(s1));
	run_deferred();
	assert_true(held(s2));
	finish(o);
	assert_true(running(s2));
	finish(s2);
	assert_false(ran(s1));
	assert_null(response(s1));
}

/* The only task holding others is aborted while it collects data: they run. */
static void test_abort_blocker_collecting_data(void **state)
{
	uint32_t w = cmd(SIMPLE, WRITE_R2T), o = cmd(ORDERED, READ), s = cmd(SIMPLE, READ);
	uint32_t t;

	(void)state;
	assert_true(held(o) && held(s));
	t = tmf(ISCSI_TMF_ABORT_TASK, w, 0);
	assert_int_equal(tmf_response(t)->status, ISCSI_TMF_RSP_COMPLETE);
	run_deferred();
	assert_true(running(o) && held(s));
	finish(o);
	assert_true(running(s));
	finish(s);
	assert_null(response(w));
}

static void test_abort_held_ordered(void **state)
{
	uint32_t a = cmd(SIMPLE, READ), o = cmd(ORDERED, READ), s = cmd(SIMPLE, READ);
	uint32_t t;

	(void)state;
	assert_true(held(o) && held(s));
	t = tmf(ISCSI_TMF_ABORT_TASK, o, 0);
	assert_int_equal(tmf_response(t)->status, ISCSI_TMF_RSP_COMPLETE);
	run_deferred();
	assert_true(running(s)); /* nothing older holds it now */
	finish(a);
	finish(s);
	assert_false(ran(o));
}

static void test_abort_running_ordered(void **state)
{
	uint32_t o = cmd(ORDERED, READ), s = cmd(SIMPLE, READ);
	uint32_t t;

	(void)state;
	t = tmf(ISCSI_TMF_ABORT_TASK, o, 0);
	assert_int_equal(aborts, 1);
	assert_null(tmf_response(t)); /* waits for the SCSI layer */
	assert_true(held(s));
	finish(o);
	assert_int_equal(tmf_response(t)->status, ISCSI_TMF_RSP_COMPLETE);
	assert_null(response(o));
	assert_true(running(s));
	finish(s);
}

/* ABORT TASK SET, CLEAR TASK SET, LOGICAL UNIT RESET, TARGET WARM/COLD RESET. */
static void tmf_with_held(uint8_t func)
{
	uint32_t other = cmd_sn(SIMPLE, 1, READ, 0, false);
	uint32_t o = cmd(ORDERED, READ), s1 = cmd(SIMPLE, READ), o2 = cmd(ORDERED, READ);
	uint32_t h = cmd(HOQ, READ), s2 = cmd(SIMPLE, WRITE_R2T), t, after;
	bool whole_target = func == ISCSI_TMF_TARGET_WARM_RESET ||
			    func == ISCSI_TMF_TARGET_COLD_RESET;

	assert_true(running(o) && running(h) && held(s1) && held(o2) && running(other));
	t = tmf(func, ISCSI_RSVD_TAG, 0);
	assert_null(tmf_response(t)); /* the running ones first */
	run_deferred();
	assert_false(ran(s1) || ran(o2) || ran(s2));
	finish(o);
	assert_null(tmf_response(t));
	finish(h);
	if (whole_target) {
		assert_null(tmf_response(t));
		finish(other);
	}
	assert_non_null(tmf_response(t));
	assert_int_equal(tmf_response(t)->status, ISCSI_TMF_RSP_COMPLETE);
	assert_int_equal(drops, func == ISCSI_TMF_TARGET_COLD_RESET ? 1 : 0);
	assert_false(ran(s1) || ran(o2) || ran(s2));
	assert_null(response(o));
	assert_null(response(s1));
	assert_null(response(o2));
	if (!whole_target) {
		assert_true(running(other)); /* another LUN's task set */
		finish(other);
		assert_good(other);
	}
	/* the set is empty again: a new ORDERED task runs at once */
	after = cmd(ORDERED, READ);
	assert_true(running(after));
	finish(after);
}

static void test_abort_task_set(void **state)
{
	(void)state;
	tmf_with_held(ISCSI_TMF_ABORT_TASK_SET);
}

static void test_clear_task_set(void **state)
{
	(void)state;
	tmf_with_held(ISCSI_TMF_CLEAR_TASK_SET);
}

static void test_lun_reset(void **state)
{
	(void)state;
	tmf_with_held(ISCSI_TMF_LOGICAL_UNIT_RESET);
}

static void test_target_warm_reset(void **state)
{
	(void)state;
	tmf_with_held(ISCSI_TMF_TARGET_WARM_RESET);
}

static void test_target_cold_reset(void **state)
{
	(void)state;
	tmf_with_held(ISCSI_TMF_TARGET_COLD_RESET);
}

/* ---------------- logout, connection gone ---------------- */

/* Logged out (the response on its way): held tasks still run in order. */
static void test_logged_out(void **state)
{
	uint32_t o = cmd(ORDERED, READ), s = cmd(SIMPLE, READ);

	(void)state;
	conn->state = CONN_STATE_LOGGED_OUT;
	finish(o);
	assert_true(running(s));
	finish(s);
}

/* The connection goes with tasks held: the held ones are freed, the running one when done. */
static void test_conn_closed(void **state)
{
	uint32_t o = cmd(ORDERED, READ), s1 = cmd(SIMPLE, READ), s2 = cmd(ORDERED, READ);
	uint32_t s3 = cmd(SIMPLE, WRITE_R2T), w = cmd_sn(SIMPLE, 0, READ, next_sn + 5, false);

	(void)state;
	(void)s3;
	assert_true(held(s1) && held(s2));
	conn->state = CONN_STATE_CLOSING;
	iscsi_conn_abort_tasks(conn);
	run_deferred();
	assert_int_equal(conn->ntasks, 1); /* the running one, until the SCSI layer lets go */
	assert_int_equal(aborts, 1);
	complete(o);
	run_deferred();
	assert_false(ran(s1) || ran(s2) || ran(w));
	assert_null(response(o));
}

/* Closed while the released tasks wait for sched_work: it runs none. */
static void test_conn_closed_while_scheduled(void **state)
{
	uint32_t o = cmd(ORDERED, READ), s = cmd(SIMPLE, READ);

	(void)state;
	complete(o);
	assert_false(list_empty(&deferred));
	conn->state = CONN_STATE_CLOSING;
	iscsi_conn_abort_tasks(conn);
	run_deferred();
	assert_false(ran(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_simple_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ordered_alone_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ordered_then_two_simple, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ordered_waits_for_older, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_ordered_in_a_row, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ordered_chain_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hoq_runs_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ordered_behind_hoq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_aca_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserved_attr_is_ordered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_luns_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ordered_waits_for_write_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ordered_write_then_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cmdsn_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_immediate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bidi_out_of_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_held_task, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_blocker_collecting_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_held_ordered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_running_ordered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_task_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clear_task_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lun_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_target_warm_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_target_cold_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_logged_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conn_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conn_closed_while_scheduled, setup, teardown),
	};

	signal(SIGALRM, watchdog);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
