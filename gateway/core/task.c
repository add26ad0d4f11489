/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tasks: SCSI Command intake, the CmdSN window, Data-Out placement and R2Ts,
 * status delivery (Data-In builders and SCSI Response), and task management.
 * A task's life is enum iscsi_task_state (core/iscsi.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/iscsi.h"
#include "core/pdu.h"
#include "common/bufpool.h"
#include "common/log.h"

#define COMP "task"
#define ISCSI_MAX_EDTL (64u * 1024u * 1024u)

struct iscsi_tmf {
	struct list_head link;          /* conn->tmfs */
	struct iscsi_conn *conn;
	struct iscsi_tx_pdu *pdu;
	uint32_t waiting;               /* aborted tasks still in the SCSI layer */
	bool cold_reset;
};

static void task_exec(struct iscsi_task *t);
static void tmf_task_gone(struct iscsi_tmf *tmf);
static void task_set_leave(struct iscsi_task *t);
static void task_set_put(struct iscsi_session *s, struct iscsi_task_set *set);

/*
 * Tasks come from the reactor's cache: a command costs no allocator call and
 * no zeroing of the whole task (about 1.5 KiB), see struct iscsi_task.
 */
static _Thread_local struct gw_obj_cache tl_task_cache =
	GW_OBJ_CACHE_INIT(sizeof(struct iscsi_task), 256);

enum task_class { TASK_SIMPLE, TASK_ORDERED, TASK_HEAD_OF_QUEUE, TASK_ACA };

static enum task_class task_class_of(uint8_t flags)
{
	switch (flags & ISCSI_CMD_ATTR_MASK) {
	case SCSI_ATTR_UNTAGGED:
	case SCSI_ATTR_SIMPLE:
		return TASK_SIMPLE;
	case SCSI_ATTR_HEAD_OF_QUEUE:
		return TASK_HEAD_OF_QUEUE;
	case SCSI_ATTR_ACA:
		return TASK_ACA;
	default:
		return TASK_ORDERED;
	}
}

/* A task for the SCSI Command hdr, in c's task list; NULL without memory. */
static struct iscsi_task *task_alloc(struct iscsi_conn *c, const struct iscsi_scsi_cmd *hdr)
{
	struct iscsi_task *t = gw_obj_get(&tl_task_cache);
	bool rbit = hdr->flags & ISCSI_CMD_READ, wbit = hdr->flags & ISCSI_CMD_WRITE;
	size_t sense = offsetof(struct scsi_cmd, sense), sense_end = sense + SCSI_SENSE_MAX;

	if (!t)
		return NULL;
	/* the first part of struct iscsi_task, field by field */
	t->conn = c;
	list_add_tail(&t->link, &c->tasks);
	list_init(&t->pend_link);
	list_init(&t->set_link);
	list_init(&t->barrier_link);
	t->set = NULL;
	t->hdr = *hdr;
	t->state = TASK_STATE_NEW;
	t->itt = be32toh(hdr->itt);
	t->cmd_sn = be32toh(hdr->cmd_sn);
	t->edtl = (rbit || wbit) ? be32toh(hdr->exp_xfer_len) : 0;
	t->lun = iscsi_lun_decode(hdr->lun);
	/* the arrival of the PDU being handled (iscsi_conn_rx_pdu read the clock) */
	t->start_us = c->rx_us ? c->rx_us : gw_counters_now_us();
	t->immediate = iscsi_bhs_immediate((const struct iscsi_bhs *)hdr);
	t->data_in = rbit;
	t->data_out = wbit;
	t->cls = (uint8_t)task_class_of(hdr->flags);
	/* the rest: zeroed, but for what a command does not use */
	gw_zero(&t->in_set, offsetof(struct iscsi_task, r2t) - offsetof(struct iscsi_task, in_set));
	if (wbit)
		memset(t->r2t, 0, sizeof(t->r2t));
	gw_zero(&t->scsi, sense);
	gw_zero((uint8_t *)&t->scsi + sense_end, offsetof(struct scsi_cmd, priv_io) - sense_end);
	c->ntasks++;
	iscsi_conn_get(c);
	return t;
}

static void task_free(struct iscsi_task *t)
{
	struct iscsi_conn *c = t->conn;

	if (t->tmf)
		tmf_task_gone(t->tmf);
	list_del(&t->link);
	list_del(&t->pend_link);
	if (t->set) {
		task_set_leave(t);
		task_set_put(c->sess, t->set);
	}
	c->ntasks--;
	c->dm->release_task(c, t);
	if (t->edtl)
		c->dm->buf_put(c, t); /* or cancels the wait for one */
	free(t->staging);
	gw_obj_put(&tl_task_cache, t);
	iscsi_conn_put(c);
}

static struct iscsi_task *task_find(struct iscsi_conn *c, uint32_t itt_be)
{
	struct list_head *pos;

	list_for_each(pos, &c->tasks) {
		struct iscsi_task *t = list_entry(pos, struct iscsi_task, link);

		if (t->hdr.itt == itt_be)
			return t;
	}
	return NULL;
}

/* ---------------- responses ---------------- */

uint32_t iscsi_task_data_in_len(const struct iscsi_task *t)
{
	if (!t->data_in || (t->scsi.status != SCSI_STATUS_GOOD &&
			    t->scsi.status != SCSI_STATUS_CONDITION_MET))
		return 0;
	return t->scsi.xfer_len < t->edtl ? t->scsi.xfer_len : t->edtl;
}

bool iscsi_task_put_data_with_status(const struct iscsi_task *t)
{
	return t->scsi.sense_len == 0 && !t->data_out;
}

static void task_residual(const struct iscsi_task *t, uint8_t *flags, uint32_t *residual)
{
	uint32_t xfer = t->scsi.xfer_len;

	*flags = 0;
	*residual = 0;
	if (!t->data_in && !t->data_out) {
		if (xfer) {
			*flags = ISCSI_RSP_OVERFLOW;
			*residual = xfer;
		}
		return;
	}
	if (t->scsi.status != SCSI_STATUS_GOOD && t->scsi.status != SCSI_STATUS_CONDITION_MET &&
	    !t->data_out)
		xfer = 0;
	if (xfer < t->edtl) {
		*flags = ISCSI_RSP_UNDERFLOW;
		*residual = t->edtl - xfer;
	} else if (xfer > t->edtl) {
		*flags = ISCSI_RSP_OVERFLOW;
		*residual = xfer - t->edtl;
	}
}

void iscsi_task_build_datain(struct iscsi_task *t, struct iscsi_data_in *h, uint32_t offset,
			     uint32_t len, bool final, bool status)
{
	memset(h, 0, sizeof(*h));
	h->opcode = ISCSI_OP_DATA_IN;
	h->flags = final ? ISCSI_FLAG_FINAL : 0;
	memcpy(h->lun, t->hdr.lun, 8);
	h->itt = t->hdr.itt;
	h->ttt = ISCSI_RSVD_TAG;
	h->data_sn = htobe32(t->data_sn++);
	h->buffer_offset = htobe32(offset);
	iscsi_bhs_set_dsl((struct iscsi_bhs *)h, len);
	if (status) {
		uint8_t rflags;
		uint32_t residual;

		task_residual(t, &rflags, &residual);
		h->flags |= ISCSI_DATAIN_STATUS | rflags;
		h->status = t->scsi.status;
		h->residual = htobe32(residual);
		t->state = TASK_STATE_RESPONSE;
	}
}

void iscsi_task_tx_done(struct iscsi_task *t)
{
	if (t->pending_tx)
		t->pending_tx--;
	if (!t->pending_tx && (t->state == TASK_STATE_RESPONSE || t->state == TASK_STATE_DONE ||
			       t->conn->state == CONN_STATE_CLOSING))
		task_free(t);
}

static void rsp_sent(struct iscsi_tx_pdu *pdu, int status)
{
	(void)status;
	iscsi_task_tx_done(pdu->ctx);
}

void iscsi_task_send_response(struct iscsi_task *t)
{
	struct iscsi_tx_pdu *pdu = &t->rsp;
	struct iscsi_scsi_rsp *r = (struct iscsi_scsi_rsp *)&pdu->bhs;
	uint8_t rflags;
	uint32_t residual;

	memset(pdu, 0, sizeof(*pdu));
	task_residual(t, &rflags, &residual);
	r->opcode = ISCSI_OP_SCSI_RSP;
	r->flags = ISCSI_FLAG_FINAL | rflags;
	r->response = ISCSI_RESPONSE_COMPLETED;
	r->status = t->scsi.status;
	r->itt = t->hdr.itt;
	r->exp_data_sn = htobe32(t->data_in ? t->data_sn : 0);
	r->residual = htobe32(residual);
	if (t->scsi.sense_len) {
		/* SenseLength (2 bytes) + sense data, kept inside the task */
		uint8_t *sd = t->sense_seg;

		put_be16(sd, t->scsi.sense_len);
		memcpy(sd + 2, t->scsi.sense, t->scsi.sense_len);
		pdu->data = sd;
		pdu->data_len = 2u + t->scsi.sense_len;
		iscsi_bhs_set_dsl(&pdu->bhs, pdu->data_len);
	}
	pdu->sent = rsp_sent;
	pdu->ctx = t;
	t->state = TASK_STATE_RESPONSE;
	t->pending_tx++;
	iscsi_conn_send(t->conn, pdu, true);
}

/* I/O counters of the session, LUN, target port and device group (core/counters.h). */
static void task_count(const struct iscsi_task *t, bool aborted)
{
	struct iscsi_session *s = t->conn->sess;
	const struct scsi_port *port = s->itn.port;
	struct gw_io_done d = {
		.target = t->scsi.lu ? s->target : NULL, .lun = (uint32_t)t->lun,
		.rel_port_id = port ? port->rel_port_id : 0, .tpg_id = port ? port->tpg_id : 0,
		.dg = t->scsi.lu ? (uint16_t)(scsi_lu_dg_index(t->scsi.lu) + 1) : 0,
		.opcode = t->scsi.cdb[0], .status = t->scsi.status, .aborted = aborted,
		.bytes_read = aborted ? 0 : iscsi_task_data_in_len(t),
		/* data written: only by a command that completed GOOD */
		.bytes_written = t->data_out && !aborted && t->scsi.status == SCSI_STATUS_GOOD ?
				 t->received : 0,
		.start_us = t->start_us,
		.cache = &s->ctr_cache,
	};

	gw_counters_done(&s->stats, &d);
}

static void task_scsi_done(struct scsi_cmd *cmd)
{
	struct iscsi_task *t = cmd->ctx;
	struct iscsi_conn *c = t->conn;
	uint32_t len;

	task_count(t, t->aborted || c->state == CONN_STATE_CLOSING);
	task_set_leave(t);
	if (t->aborted || c->state == CONN_STATE_CLOSING) {
		task_free(t);
		return;
	}
	len = iscsi_task_data_in_len(t);
	if (len) {
		atomic_fetch_add(&c->gw->stats.read_bytes, len);
		t->state = TASK_STATE_DATA_IN;
		if (c->dm->put_data(c, t) == 0)
			return;
		iscsi_conn_drop(c, "could not queue Data-In");
		task_free(t);
		return;
	}
	iscsi_task_send_response(t);
}

/* ---------------- command intake ---------------- */

static void task_fail_now(struct iscsi_task *t, uint8_t key, uint8_t asc, uint8_t ascq);

/*
 * SAM-5 task attributes. Each LUN a session uses has a task set (the
 * Control mode page says TST 001b: one task set per I_T nexus), its tasks in
 * the order they were received (CmdSN order, an immediate command when it
 * arrives). A task ready to run (its write data in) is enabled when
 *   SIMPLE (and untagged): no older ORDERED or HEAD OF QUEUE task is in the set;
 *   ORDERED (and the reserved values 5-7): no older task is in the set;
 *   HEAD OF QUEUE: at once;
 *   ACA: never: no ACA condition can exist (NACA is refused), so it ends with
 *   CHECK CONDITION, ILLEGAL REQUEST, INVALID MESSAGE ERROR.
 * Otherwise it is held in the set's held list (oldest first). A task leaves
 * the set when the SCSI layer completes it or it is freed (aborted, its
 * connection gone). When a set with held tasks loses a task, the session's
 * sched_work runs the held tasks that may run now, oldest first, stopping at
 * the first that may not: every later one is blocked by it or by what blocks
 * it. Each test is O(1); nothing runs inside another task's completion.
 */
struct iscsi_task_set {
	struct list_head link;          /* session->task_sets */
	struct list_head run_link;      /* session->sets_to_run */
	uint64_t lun;
	uint32_t refs;                  /* tasks of this LUN (in the set or on their way) */
	struct list_head tasks;         /* in the set, oldest first */
	struct list_head barriers;      /* ORDERED and HEAD OF QUEUE tasks in the set, oldest first */
	struct list_head held;          /* ready but not enabled, oldest first */
};

/* The class of a task, worked out once from its attribute (task_alloc: t->cls). */
static enum task_class task_class(const struct iscsi_task *t)
{
	return (enum task_class)t->cls;
}

static void task_sets_run(void *arg);

void iscsi_task_sets_init(struct iscsi_session *s)
{
	list_init(&s->task_sets);
	list_init(&s->sets_to_run);
	reactor_deferred_init(&s->sched_work, task_sets_run, s);
}

void iscsi_task_sets_fini(struct iscsi_session *s)
{
	reactor_deferred_cancel(s->reactor, &s->sched_work);
	/* every task is gone, so is every set but the spare */
	free(s->spare_set);
	s->spare_set = NULL;
}

/* The task set of lun, made if it has none; one more reference. NULL: no memory. */
static struct iscsi_task_set *task_set_get(struct iscsi_session *s, uint64_t lun)
{
	struct iscsi_task_set *set;
	struct list_head *pos;

	list_for_each(pos, &s->task_sets) {
		set = list_entry(pos, struct iscsi_task_set, link);
		if (set->lun == lun) {
			set->refs++;
			return set;
		}
	}
	set = s->spare_set;
	s->spare_set = NULL;
	if (!set)
		set = malloc(sizeof(*set));
	if (!set)
		return NULL;
	set->lun = lun;
	set->refs = 1;
	list_init(&set->run_link);
	list_init(&set->tasks);
	list_init(&set->barriers);
	list_init(&set->held);
	list_add(&set->link, &s->task_sets);
	return set;
}

static void task_set_put(struct iscsi_session *s, struct iscsi_task_set *set)
{
	if (--set->refs)
		return;
	list_del(&set->link);
	list_del(&set->run_link);
	if (!s->spare_set)
		s->spare_set = set; /* one kept: a LUN at queue depth 1 makes no malloc per command */
	else
		free(set);
}

/* The task arrived in order: it enters its set, the youngest. */
static void task_set_enter(struct iscsi_task *t)
{
	struct iscsi_session *s = t->conn->sess;
	enum task_class cl = task_class(t);

	if (t->in_set)
		return;
	t->in_set = true;
	t->seq = s->next_task_seq++;
	list_add_tail(&t->set_link, &t->set->tasks);
	if (cl == TASK_ORDERED || cl == TASK_HEAD_OF_QUEUE)
		list_add_tail(&t->barrier_link, &t->set->barriers);
	if (cl == TASK_ORDERED && (t->hdr.flags & ISCSI_CMD_ATTR_MASK) != SCSI_ATTR_ORDERED &&
	    !s->attr_warned) {
		s->attr_warned = true;
		GW_WARN(COMP, "%s (%s): SCSI command ITT 0x%08x with reserved task attribute %u: "
			"run as ORDERED (logged once per session)", t->conn->peer, s->initiator,
			t->itt, t->hdr.flags & ISCSI_CMD_ATTR_MASK);
	}
}

/* May t, ready, be enabled now? */
static bool task_may_run(const struct iscsi_task *t)
{
	const struct iscsi_task_set *set = t->set;
	const struct iscsi_task *b;

	switch (task_class(t)) {
	case TASK_HEAD_OF_QUEUE:
	case TASK_ACA:
		return true;
	case TASK_ORDERED:
		return list_first_entry(&set->tasks, struct iscsi_task, set_link) == t;
	default:
		if (list_empty(&set->barriers))
			return true;
		b = list_first_entry(&set->barriers, struct iscsi_task, barrier_link);
		return b->seq > t->seq;
	}
}

/* Hold t in its set's held list, in age order. */
static void task_hold(struct iscsi_task *t)
{
	struct list_head *pos = t->set->held.prev;

	while (pos != &t->set->held &&
	       list_entry(pos, struct iscsi_task, pend_link)->seq > t->seq)
		pos = pos->prev;
	list_add(&t->pend_link, pos);
	t->state = TASK_STATE_WAIT_ORDER;
}

/* t leaves its set (completed or freed); held tasks may run after this batch. */
static void task_set_leave(struct iscsi_task *t)
{
	struct iscsi_session *s = t->conn->sess;
	struct iscsi_task_set *set = t->set;

	if (!t->in_set)
		return;
	t->in_set = false;
	list_del(&t->set_link);
	list_del(&t->barrier_link);
	if (t->state == TASK_STATE_WAIT_ORDER)
		list_del(&t->pend_link);
	if (!list_empty(&set->held) && list_empty(&set->run_link)) {
		list_add_tail(&set->run_link, &s->sets_to_run);
		reactor_defer(s->reactor, &s->sched_work);
	}
}

static void task_run(struct iscsi_task *t);

/* sched_work: enable the held tasks that may run, oldest first in each set. */
static void task_sets_run(void *arg)
{
	struct iscsi_session *s = arg;
	struct iscsi_conn *c = s->conn;

	iscsi_conn_get(c);
	while (!list_empty(&s->sets_to_run) && c->state != CONN_STATE_CLOSING) {
		struct iscsi_task_set *set =
			list_first_entry(&s->sets_to_run, struct iscsi_task_set, run_link);

		list_del(&set->run_link);
		set->refs++; /* its tasks may complete and go while it runs */
		while (!list_empty(&set->held) && c->state != CONN_STATE_CLOSING) {
			struct iscsi_task *t =
				list_first_entry(&set->held, struct iscsi_task, pend_link);

			if (!task_may_run(t))
				break;
			list_del(&t->pend_link);
			task_run(t);
		}
		task_set_put(s, set);
	}
	iscsi_conn_put(c);
}

static void task_exec(struct iscsi_task *t)
{
	struct iscsi_conn *c = t->conn;

	if (t->data_err) {
		/* the write data did not arrive intact: nothing reaches the medium */
		task_fail_now(t, SCSI_SK_ABORTED_COMMAND, t->data_err >> 8, t->data_err & 0xff);
		return;
	}
	if (t->data_out && (t->hdr.flags & ISCSI_CMD_READ)) {
		/* bidirectional commands are not supported; reached in CmdSN order */
		task_fail_now(t, SCSI_SK_ILLEGAL_REQUEST, 0x24, 0x00);
		return;
	}
	if (task_class(t) == TASK_ACA) {
		if (iscsi_conn_log_room(c))
			GW_WARN(COMP, "%s (%s): SCSI command ITT 0x%08x with the ACA task attribute and "
				"no ACA condition: INVALID MESSAGE ERROR", c->peer, c->sess->initiator,
				t->itt);
		task_fail_now(t, SCSI_SK_ILLEGAL_REQUEST, 0x49, 0x00);
		return;
	}
	if (!task_may_run(t)) {
		task_hold(t);
		return;
	}
	task_run(t);
}

/* Hand t to the SCSI layer. */
static void task_run(struct iscsi_task *t)
{
	struct iscsi_conn *c = t->conn;
	struct iscsi_session *s = c->sess;
	struct scsi_cmd *cmd = &t->scsi;

	t->state = TASK_STATE_EXEC;
	cmd->itn = &s->itn;
	cmd->lun = t->lun;
	cmd->lu = s->target ? gw_target_lu(s->target, t->lun) : NULL;
	cmd->attr = t->hdr.flags & ISCSI_CMD_ATTR_MASK;
	cmd->data_in = t->data_in;
	cmd->data_out = t->data_out;
	cmd->buf = t->buf;
	cmd->buf_len = t->edtl;
	cmd->done = task_scsi_done;
	cmd->ctx = t;
	if (t->data_out)
		atomic_fetch_add(&c->gw->stats.write_bytes, t->edtl);
	atomic_fetch_add(&c->gw->stats.commands, 1);
	scsi_cmd_submit(cmd);
}

static bool task_cmdsn_ready(const struct iscsi_task *t)
{
	return t->state != TASK_STATE_WAIT_CMDSN;
}

static void task_maybe_exec(struct iscsi_task *t)
{
	if (t->buf_wait)
		return;
	if (t->received >= t->edtl || !t->data_out) {
		if (task_cmdsn_ready(t))
			task_exec(t);
	}
}

void iscsi_session_run_pending(struct iscsi_session *s)
{
	bool progress = true;

	while (progress && !list_empty(&s->pending)) {
		struct list_head *pos, *n;

		progress = false;
		list_for_each_safe(pos, n, &s->pending) {
			struct iscsi_task *t = list_entry(pos, struct iscsi_task, pend_link);

			if (t->cmd_sn != s->exp_cmd_sn)
				continue;
			s->exp_cmd_sn++;
			list_del(&t->pend_link);
			s->npending--;
			progress = true;
			if (t->aborted) {
				task_free(t);
				continue;
			}
			task_set_enter(t);
			t->state = t->data_out && t->received < t->edtl ? TASK_STATE_DATA_OUT
									   : TASK_STATE_NEW;
			task_maybe_exec(t);
		}
	}
}

/* Respond with CHECK CONDITION without executing (e.g. bidirectional commands). */
static void task_fail_now(struct iscsi_task *t, uint8_t key, uint8_t asc, uint8_t ascq)
{
	t->scsi.xfer_len = 0;
	t->scsi.ctx = t;
	scsi_cmd_set_sense(&t->scsi, key, asc, ascq);
	t->state = TASK_STATE_EXEC;
	task_scsi_done(&t->scsi);
}

static int parse_cdb(struct iscsi_task *t, const uint8_t *ahs, uint32_t ahs_len)
{
	uint32_t off = 0;

	memcpy(t->scsi.cdb, t->hdr.cdb, 16);
	t->scsi.cdb_len = 16;
	while (off + 4 <= ahs_len) {
		uint16_t len = get_be16(ahs + off);
		uint8_t type = ahs[off + 2];
		uint32_t total = 3u + len;

		total += iscsi_pad4(total);
		if (off + 3u + len > ahs_len)
			return -EPROTO;
		if (type == ISCSI_AHS_EXTENDED_CDB) {
			/* reserved byte, then CDB bytes 16.. */
			if (len < 2 || len - 1u + 16u > SCSI_CDB_MAX)
				return -EPROTO;
			memcpy(t->scsi.cdb + 16, ahs + off + 4, len - 1u);
			t->scsi.cdb_len = (uint8_t)(16 + len - 1);
		} else if (type != ISCSI_AHS_BIDI_READ_LEN) {
			return -EPROTO;
		}
		off += total;
	}
	return off == ahs_len || ahs_len - off < 4 ? 0 : -EPROTO;
}

int iscsi_task_scsi_cmd(struct iscsi_conn *c, const struct iscsi_bhs *bhs,
			const uint8_t *ahs, uint32_t ahs_len, const uint8_t *data, uint32_t dlen)
{
	const struct iscsi_scsi_cmd *hdr = (const struct iscsi_scsi_cmd *)bhs;
	struct iscsi_session *s = c->sess;
	const struct iscsi_sess_params *sp = &s->params;
	struct iscsi_task *t;
	uint32_t cmd_sn = be32toh(hdr->cmd_sn);
	uint32_t edtl = be32toh(hdr->exp_xfer_len);
	bool immediate = iscsi_bhs_immediate(bhs);
	bool rbit = hdr->flags & ISCSI_CMD_READ, wbit = hdr->flags & ISCSI_CMD_WRITE;
	bool queue = false;

	/* CmdSN window first: commands outside it are silently ignored (RFC 7143 4.2.2.1) */
	switch (iscsi_cmdsn_check(s->exp_cmd_sn, iscsi_conn_max_cmd_sn(c), cmd_sn, immediate)) {
	case ISCSI_CMDSN_IGNORE:
		if (iscsi_conn_log_room(c))
			GW_WARN(COMP, "%s (%s): SCSI command ITT 0x%08x CmdSN %u outside window "
				"[%u, %u]: ignored", c->peer, s->initiator, be32toh(hdr->itt), cmd_sn,
				s->exp_cmd_sn, iscsi_conn_max_cmd_sn(c));
		return 0;
	case ISCSI_CMDSN_QUEUE:
		queue = true;
		break;
	default:
		break;
	}
	if (hdr->itt == ISCSI_RSVD_TAG || (!wbit && dlen) || (dlen && !sp->immediate_data) ||
	    dlen > edtl || dlen > sp->first_burst ||
	    (wbit && sp->initial_r2t && !(hdr->flags & ISCSI_FLAG_FINAL)) ||
	    (!(hdr->flags & ISCSI_FLAG_FINAL) && !wbit)) {
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		goto out_advance;
	}
	if (task_find(c, hdr->itt)) {
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_TASK_IN_PROGRESS);
		goto out_advance;
	}
	if (edtl > ISCSI_MAX_EDTL) {
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_OUT_OF_RESOURCES);
		goto out_advance;
	}
	t = task_alloc(c, hdr);
	if (!t) {
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_OUT_OF_RESOURCES);
		goto out_advance;
	}
	t->set = task_set_get(s, t->lun);
	if (!t->set) {
		task_free(t);
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_OUT_OF_RESOURCES);
		goto out_advance;
	}
	if (wbit) {
		if (hdr->flags & ISCSI_FLAG_FINAL || sp->initial_r2t)
			t->unsol_end = dlen;
		else
			t->unsol_end = edtl < sp->first_burst ? edtl : sp->first_burst;
	}
	if (t->edtl) {
		int rc = c->dm->buf_get(c, t);

		if (rc == -EAGAIN) {
			/* the datamover's buffers are all busy: wait, keeping the
			 * unsolicited data in a staging buffer meanwhile */
			t->buf_wait = true;
			if (t->unsol_end) {
				t->staging = malloc(t->unsol_end);
				t->buf = t->staging;
				rc = t->staging ? 0 : -ENOMEM;
			} else {
				rc = 0;
			}
		}
		if (rc) {
			task_free(t);
			iscsi_conn_reject(c, bhs, ISCSI_REJECT_OUT_OF_RESOURCES);
			goto out_advance;
		}
	}
	if (parse_cdb(t, ahs, ahs_len)) {
		task_free(t);
		iscsi_conn_reject(c, bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		goto out_advance;
	}
	if (queue) {
		t->state = TASK_STATE_WAIT_CMDSN;
		list_add_tail(&t->pend_link, &s->pending);
		s->npending++;
	} else {
		task_set_enter(t);
		if (!immediate)
			s->exp_cmd_sn++;
	}

	if (wbit) {
		if (dlen)
			memcpy(t->buf, data, dlen);
		t->received = dlen;
		t->unsol_received = dlen;
		t->r2t_next = t->unsol_end;
		if (t->state != TASK_STATE_WAIT_CMDSN)
			t->state = TASK_STATE_DATA_OUT;
	}
	if (rbit && wbit)
		t->data_in = false; /* bidirectional: collect the data, then fail (task_exec) */
	if (wbit && !t->buf_wait && t->received < t->edtl && t->r2t_next < t->edtl) {
		if (c->dm->get_data(c, t)) {
			iscsi_conn_drop(c, "could not request Data-Out");
			return -EIO;
		}
	}
	/* this command first, then those its CmdSN let go: delivery in CmdSN order */
	if (t->state != TASK_STATE_WAIT_CMDSN)
		task_maybe_exec(t);
	if (!queue && !list_empty(&s->pending))
		iscsi_session_run_pending(s);
	return 0;

out_advance:
	/* a rejected command still consumed its CmdSN */
	if (!immediate && !queue) {
		s->exp_cmd_sn++;
		iscsi_session_run_pending(s);
	}
	return 0;
}

/* ---------------- Data-Out and R2T ---------------- */

int iscsi_task_send_r2ts(struct iscsi_task *t)
{
	struct iscsi_conn *c = t->conn;
	const struct iscsi_sess_params *sp = &c->sess->params;
	uint32_t max_r2t = sp->max_outstanding_r2t;

	if (max_r2t > ISCSI_MAX_R2T)
		max_r2t = ISCSI_MAX_R2T;
	if (!max_r2t)
		max_r2t = 1;
	while (t->r2t_outstanding < max_r2t && t->r2t_next < t->edtl) {
		struct iscsi_r2t_state *st = NULL;
		struct iscsi_tx_pdu *pdu;
		struct iscsi_r2t *r;
		uint32_t len = t->edtl - t->r2t_next;

		for (unsigned int i = 0; i < ISCSI_MAX_R2T; i++) {
			if (!t->r2t[i].active) {
				st = &t->r2t[i];
				break;
			}
		}
		if (!st)
			break;
		if (len > sp->max_burst)
			len = sp->max_burst;
		pdu = iscsi_tx_pdu_alloc();
		if (!pdu)
			return -ENOMEM;
		st->active = true;
		st->ttt = c->next_ttt++;
		if (st->ttt == ISCSI_RSVD_TAG)
			st->ttt = c->next_ttt++;
		st->offset = t->r2t_next;
		st->len = len;
		st->received = 0;
		st->exp_data_sn = 0;
		r = (struct iscsi_r2t *)&pdu->bhs;
		r->opcode = ISCSI_OP_R2T;
		r->flags = ISCSI_FLAG_FINAL;
		memcpy(r->lun, t->hdr.lun, 8);
		r->itt = t->hdr.itt;
		r->ttt = htobe32(st->ttt);
		r->r2t_sn = htobe32(t->r2t_sn++);
		r->buffer_offset = htobe32(st->offset);
		r->desired_len = htobe32(len);
		t->r2t_next += len;
		t->r2t_outstanding++;
		iscsi_conn_send(c, pdu, false);
	}
	return 0;
}

void iscsi_task_buf_ready(struct iscsi_task *t)
{
	struct iscsi_conn *c = t->conn;

	t->buf_wait = false;
	if (t->staging) {
		memcpy(t->buf, t->staging, t->unsol_received);
		free(t->staging);
		t->staging = NULL;
	}
	/* aborted or closing tasks cancel their wait in buf_put: not here */
	if (t->data_out && !t->data_err && t->received < t->edtl && t->r2t_next < t->edtl &&
	    c->dm->get_data(c, t)) {
		iscsi_conn_drop(c, "could not request Data-Out");
		return;
	}
	task_maybe_exec(t);
}

void iscsi_task_data_ready(struct iscsi_task *t)
{
	if (t->aborted)
		return;
	task_maybe_exec(t);
}

/*
 * A Data-Out sequence error (RFC 7143 7.x, ErrorRecoveryLevel 0): the command
 * ends with ABORTED COMMAND (4B/00 DATA PHASE ERROR, 4B/05 DATA OFFSET ERROR),
 * nothing is written, later Data-Out for it is absorbed and the connection
 * stays up.
 */
static void task_data_error(struct iscsi_task *t, uint16_t asc_ascq)
{
	t->data_err = asc_ascq;
	for (unsigned int i = 0; i < ISCSI_MAX_R2T; i++)
		t->r2t[i].active = false;
	t->r2t_outstanding = 0;
	t->r2t_next = t->edtl;
	t->received = t->edtl;
	if (t->state == TASK_STATE_DATA_OUT)
		task_maybe_exec(t);
}

void iscsi_task_fetch_unsolicited(struct iscsi_conn *c, const struct iscsi_data_out *hdr)
{
	struct iscsi_task *t = task_find(c, hdr->itt);

	if (!t || !t->data_out || t->aborted || t->data_err || t->buf_wait)
		return;
	if (t->state != TASK_STATE_DATA_OUT && t->state != TASK_STATE_WAIT_CMDSN)
		return;
	if (hdr->ttt != ISCSI_RSVD_TAG || t->unsol_end <= t->unsol_received)
		return; /* solicited, or nothing unsolicited left to wait for */
	t->unsol_end = t->unsol_received;
	t->r2t_next = t->unsol_end;
	if (t->r2t_next < t->edtl && c->dm->get_data(c, t))
		iscsi_conn_drop(c, "could not fetch write data");
}

void iscsi_task_data_out_bad(struct iscsi_conn *c, const struct iscsi_data_out *hdr)
{
	struct iscsi_task *t = task_find(c, hdr->itt);

	if (!t || !t->data_out || t->aborted || t->data_err)
		return;
	if (t->state != TASK_STATE_DATA_OUT && t->state != TASK_STATE_WAIT_CMDSN)
		return;
	if (iscsi_conn_log_room(c))
		GW_WARN(COMP, "%s (%s): Data-Out ITT 0x%08x offset %u failed its data digest: failing "
			"the command", c->peer, c->sess->initiator, t->itt, be32toh(hdr->buffer_offset));
	task_data_error(t, 0x4705); /* ABORTED COMMAND, PROTOCOL SERVICE CRC ERROR */
}

void iscsi_task_data_out(struct iscsi_conn *c, const struct iscsi_data_out *hdr,
			 const uint8_t *data, uint32_t dlen)
{
	struct iscsi_task *t = task_find(c, hdr->itt);
	uint32_t offset = be32toh(hdr->buffer_offset);
	uint32_t data_sn = be32toh(hdr->data_sn);
	struct iscsi_r2t_state *st = NULL;

	if (t && (t->aborted || t->data_err))
		return; /* data for an aborted or failed task: absorb */
	if (!t || !t->data_out || (t->state != TASK_STATE_DATA_OUT &&
				   t->state != TASK_STATE_WAIT_CMDSN)) {
		iscsi_conn_reject(c, (const struct iscsi_bhs *)hdr, ISCSI_REJECT_INVALID_PDU_FIELD);
		return;
	}
	if (hdr->ttt == ISCSI_RSVD_TAG) {
		if (offset != t->unsol_received || offset + dlen > t->unsol_end ||
		    data_sn != t->unsol_exp_data_sn) {
			if (iscsi_conn_log_room(c))
				GW_WARN(COMP, "%s (%s): unsolicited Data-Out ITT 0x%08x offset %u len %u "
					"DataSN %u, expected offset %u DataSN %u (limit %u): failing the "
					"command", c->peer, c->sess->initiator, t->itt, offset, dlen, data_sn,
					t->unsol_received, t->unsol_exp_data_sn, t->unsol_end);
			task_data_error(t, data_sn != t->unsol_exp_data_sn ? 0x4b00 : 0x4b05);
			return;
		}
		t->unsol_received += dlen;
		t->unsol_exp_data_sn++;
	} else {
		uint32_t ttt = be32toh(hdr->ttt);

		for (unsigned int i = 0; i < ISCSI_MAX_R2T; i++) {
			if (t->r2t[i].active && t->r2t[i].ttt == ttt) {
				st = &t->r2t[i];
				break;
			}
		}
		if (!st) {
			iscsi_conn_reject(c, (const struct iscsi_bhs *)hdr,
					  ISCSI_REJECT_INVALID_PDU_FIELD);
			return;
		}
		if (offset != st->offset + st->received || dlen > st->len - st->received ||
		    data_sn != st->exp_data_sn) {
			if (iscsi_conn_log_room(c))
				GW_WARN(COMP, "%s (%s): Data-Out ITT 0x%08x TTT 0x%08x offset %u len %u "
					"DataSN %u, expected offset %u DataSN %u: failing the command", c->peer,
					c->sess->initiator, t->itt, ttt, offset, dlen, data_sn,
					st->offset + st->received, st->exp_data_sn);
			task_data_error(t, data_sn != st->exp_data_sn ? 0x4b00 : 0x4b05);
			return;
		}
		st->received += dlen;
		st->exp_data_sn++;
	}
	/* RFC 7143 11.7.7: a Data-Out may carry no data (data is NULL then) */
	if (dlen)
		memcpy(t->buf + offset, data, dlen);
	t->received += dlen;
	if ((hdr->flags & ISCSI_FLAG_FINAL) &&
	    (st ? st->received < st->len : t->unsol_received < t->unsol_end)) {
		/* F ends the sequence early: the rest would never come */
		if (iscsi_conn_log_room(c))
			GW_WARN(COMP, "%s (%s): %s Data-Out ITT 0x%08x with F ends its sequence %u bytes "
				"short: failing the command", c->peer, c->sess->initiator,
				st ? "solicited" : "unsolicited", t->itt,
				st ? st->len - st->received : t->unsol_end - t->unsol_received);
		/* DATA PHASE ERROR; WRITE ERROR - NOT ENOUGH UNSOLICITED DATA */
		task_data_error(t, st ? 0x4b00 : 0x0c0d);
		return;
	}
	if (st && st->received == st->len) {
		st->active = false;
		t->r2t_outstanding--;
		if (t->r2t_next < t->edtl && c->dm->get_data(c, t)) {
			iscsi_conn_drop(c, "could not request Data-Out");
			return;
		}
	}
	if (t->received >= t->edtl && t->state == TASK_STATE_DATA_OUT)
		iscsi_task_data_ready(t);
}

/* ---------------- task management ---------------- */

static void tmf_send(struct iscsi_tmf *tmf);

/* TARGET COLD RESET: the target's sessions but the requester's. */
struct cold_filter {
	struct gw_target *target;
	const struct iscsi_conn *except;        /* the requester: dropped once answered */
};

static void remote_abort_cold(struct iscsi_conn *c, void *arg);
static void abort_filter_free(void *arg);

static void tmf_task_gone(struct iscsi_tmf *tmf)
{
	if (tmf->waiting && --tmf->waiting == 0)
		tmf_send(tmf);
}

static void cold_reset_sent(struct iscsi_tx_pdu *pdu, int status)
{
	struct iscsi_conn *c = pdu->ctx;

	(void)status;
	iscsi_tx_pdu_free(pdu);
	iscsi_conn_drop(c, "TARGET COLD RESET");
}

static void tmf_send(struct iscsi_tmf *tmf)
{
	struct iscsi_conn *c = tmf->conn;

	list_del(&tmf->link);
	if (tmf->cold_reset) {
		/*
		 * every session of the target goes, once the reset is in force (on
		 * every node when the cluster carries the LU state): a host that
		 * logs in again finds it done
		 */
		struct cold_filter *f = malloc(sizeof(*f));

		if (f && c->sess) {
			f->target = c->sess->target;
			f->except = c;
			iscsi_sessions_foreach(c->gw, remote_abort_cold, f);
			gw_free_after_reactors(c->gw, abort_filter_free, f);
		} else {
			free(f);
		}
		tmf->pdu->sent = cold_reset_sent;
		tmf->pdu->ctx = c;
	}
	iscsi_conn_send(c, tmf->pdu, true);
	free(tmf);
}

/* Abort one task of this connection; returns true if the TMF must wait for it. */
static bool task_abort(struct iscsi_task *t, struct iscsi_tmf *tmf)
{
	switch (t->state) {
	case TASK_STATE_WAIT_CMDSN:
		t->aborted = true; /* freed when its CmdSN comes up */
		return false;
	case TASK_STATE_NEW:
	case TASK_STATE_DATA_OUT:
	case TASK_STATE_WAIT_ORDER:
		t->aborted = true;
		task_free(t); /* also takes it out of its task set */
		return false;
	case TASK_STATE_EXEC:
		if (t->aborted)
			return false;
		t->aborted = true;
		/* a command the SCSI layer only holds completes after this batch */
		scsi_cmd_abort(&t->scsi);
		if (tmf) {
			t->tmf = tmf;
			return true;
		}
		return false;
	default:
		return false; /* status already on its way */
	}
}

struct abort_filter {
	struct scsi_lu *lu;             /* NULL: every LU */
	struct gw_target *target;
};

static uint32_t conn_abort_matching(struct iscsi_conn *c, const struct abort_filter *f,
				    struct iscsi_tmf *tmf, struct iscsi_task *except)
{
	struct list_head *pos, *n;
	uint32_t waiting = 0;

	list_for_each_safe(pos, n, &c->tasks) {
		struct iscsi_task *t = list_entry(pos, struct iscsi_task, link);
		struct scsi_lu *lu;

		if (t == except)
			continue;
		lu = c->sess->target ? gw_target_lu(c->sess->target, t->lun) : NULL;
		if (f->lu && lu != f->lu)
			continue;
		if (task_abort(t, tmf))
			waiting++;
	}
	return waiting;
}

static void remote_abort(struct iscsi_conn *c, void *arg)
{
	struct abort_filter *f = arg;

	if (c->state != CONN_STATE_FFP || !c->sess || c->sess->target != f->target)
		return;
	conn_abort_matching(c, f, NULL, NULL);
}

static void remote_abort_cold(struct iscsi_conn *c, void *arg)
{
	struct cold_filter *f = arg;

	if (c != f->except && c->sess && c->sess->target == f->target)
		iscsi_conn_drop(c, "TARGET COLD RESET by another initiator");
}

static void abort_filter_free(void *arg)
{
	free(arg);
}

/* Abort the tasks other sessions of this target have on lu (NULL: every LU). */
static void abort_other_sessions(struct iscsi_conn *c, struct scsi_lu *lu)
{
	struct abort_filter *f = malloc(sizeof(*f));

	if (!f)
		return;
	f->lu = lu;
	f->target = c->sess->target;
	iscsi_sessions_foreach(c->gw, remote_abort, f);
	gw_free_after_reactors(c->gw, abort_filter_free, f);
}

/*
 * A reset or CLEAR TASK SET of an LU whose state the cluster carries: the
 * answer waits until every node applied it (its unit attentions are then
 * in place through every path). Holds a connection reference; the TMF may
 * be gone by then (the connection torn down).
 */
struct tmf_cluster_wait {
	struct iscsi_conn *c;
	struct iscsi_tmf *tmf;
};

static void tmf_cluster_done(void *arg)
{
	struct tmf_cluster_wait *w = arg;
	struct list_head *pos;

	list_for_each(pos, &w->c->tmfs) {
		if (list_entry(pos, struct iscsi_tmf, link) == w->tmf) {
			tmf_task_gone(w->tmf);
			break;
		}
	}
	iscsi_conn_put(w->c);
	free(w);
}

static struct tmf_cluster_wait *tmf_cluster_wait(struct iscsi_conn *c, struct iscsi_tmf *tmf)
{
	struct tmf_cluster_wait *w = malloc(sizeof(*w));

	if (!w)
		return NULL;
	w->c = c;
	w->tmf = tmf;
	iscsi_conn_get(c);
	return w;
}

/* Resets LU (or clears its task set, kind < 0) and counts in *waiting a cluster round trip. */
static void tmf_lu_state(struct iscsi_conn *c, struct iscsi_tmf *tmf, struct scsi_lu *lu, int kind,
			 uint32_t *waiting)
{
	struct tmf_cluster_wait *w = tmf_cluster_wait(c, tmf);
	bool later;

	if (kind < 0)
		later = scsi_lu_tasks_cleared_wait(lu, &c->sess->itn, w ? tmf_cluster_done : NULL, w);
	else
		later = scsi_lu_reset_wait(lu, &c->sess->itn, (enum scsi_reset_kind)kind,
					   w ? tmf_cluster_done : NULL, w);
	if (later) {
		(*waiting)++;
	} else if (w) {
		iscsi_conn_put(c);
		free(w);
	}
}

void iscsi_task_tmf(struct iscsi_conn *c, const struct iscsi_tmf_req *req)
{
	struct iscsi_session *s = c->sess;
	struct gw_target *tg = s->target;
	uint8_t func = req->function & 0x7f;
	uint64_t lun = iscsi_lun_decode(req->lun);
	struct scsi_lu *lu = tg ? gw_target_lu(tg, lun) : NULL;
	struct iscsi_tmf *tmf;
	struct iscsi_tmf_rsp *rsp;
	struct abort_filter f = { .lu = NULL, .target = tg };
	uint32_t waiting = 0;

	tmf = calloc(1, sizeof(*tmf));
	if (!tmf)
		return;
	tmf->pdu = iscsi_tx_pdu_alloc();
	if (!tmf->pdu) {
		free(tmf);
		return;
	}
	tmf->conn = c;
	list_add_tail(&tmf->link, &c->tmfs);
	rsp = (struct iscsi_tmf_rsp *)&tmf->pdu->bhs;
	rsp->opcode = ISCSI_OP_TASK_MGMT_RSP;
	rsp->flags = ISCSI_FLAG_FINAL;
	rsp->itt = req->itt;
	rsp->response = ISCSI_TMF_RSP_COMPLETE;

	switch (func) {
	case ISCSI_TMF_ABORT_TASK: {
		struct iscsi_task *t = task_find(c, req->ref_task_tag);
		uint32_t ref_cmd_sn = be32toh(req->ref_cmd_sn);

		const char *what;

		if (t && t->lun == lun && t->state < TASK_STATE_DATA_IN) {
			waiting = task_abort(t, tmf) ? 1 : 0;
			what = "aborted";
		} else if (t && t->lun == lun) {
			/* it already completed: its status is on the way, ahead of this answer */
			rsp->response = ISCSI_TMF_RSP_NO_TASK;
			what = "already completed";
		} else if (!t && sn_le(s->exp_cmd_sn, ref_cmd_sn) &&
			   sn_lt(ref_cmd_sn, be32toh(req->cmd_sn))) {
			/* RFC 7143 11.5.1 b): a command in the window that never arrived */
			what = "never received (function complete)";
		} else {
			rsp->response = ISCSI_TMF_RSP_NO_TASK;
			what = "no such task";
		}
		if (iscsi_conn_log_room(c))
			GW_NOTICE(COMP, "%s (%s): ABORT TASK ITT 0x%08x: %s", c->peer, s->initiator,
				  be32toh(req->ref_task_tag), what);
		break;
	}
	case ISCSI_TMF_ABORT_TASK_SET:
	case ISCSI_TMF_CLEAR_TASK_SET:
	case ISCSI_TMF_LOGICAL_UNIT_RESET:
		if (!lu) {
			rsp->response = ISCSI_TMF_RSP_NO_LUN;
			break;
		}
		f.lu = lu;
		waiting = conn_abort_matching(c, &f, tmf, NULL);
		/* CLEAR TASK SET and LOGICAL UNIT RESET reach every nexus of the LU */
		if (func != ISCSI_TMF_ABORT_TASK_SET) {
			abort_other_sessions(c, lu);
			tmf_lu_state(c, tmf, lu,
				     func == ISCSI_TMF_LOGICAL_UNIT_RESET ? (int)SCSI_RESET_LU : -1,
				     &waiting);
		}
		if (iscsi_conn_log_room(c))
			GW_NOTICE(COMP, "%s (%s): %s on LUN %llu", c->peer, s->initiator,
				  func == ISCSI_TMF_ABORT_TASK_SET ? "ABORT TASK SET" :
				  func == ISCSI_TMF_CLEAR_TASK_SET ? "CLEAR TASK SET" : "LOGICAL UNIT RESET",
				  (unsigned long long)lun);
		break;
	case ISCSI_TMF_TARGET_WARM_RESET:
	case ISCSI_TMF_TARGET_COLD_RESET:
		waiting = conn_abort_matching(c, &f, tmf, NULL);
		abort_other_sessions(c, NULL);
		for (uint32_t i = 0; i < tg->nluns; i++) {
			struct scsi_lu *tl = gw_target_lu(tg, i);

			if (tl)
				tmf_lu_state(c, tmf, tl,
					     func == ISCSI_TMF_TARGET_COLD_RESET ?
					     SCSI_RESET_TARGET_COLD : SCSI_RESET_TARGET_WARM, &waiting);
		}
		/* the other sessions are dropped when it is answered (tmf_send) */
		if (func == ISCSI_TMF_TARGET_COLD_RESET)
			tmf->cold_reset = true;
		if (iscsi_conn_log_room(c))
			GW_NOTICE(COMP, "%s (%s): TARGET %s RESET", c->peer, s->initiator,
				  func == ISCSI_TMF_TARGET_COLD_RESET ? "COLD" : "WARM");
		break;
	case ISCSI_TMF_CLEAR_ACA:
		rsp->response = ISCSI_TMF_RSP_NOT_SUPPORTED;
		break;
	case ISCSI_TMF_TASK_REASSIGN:
		rsp->response = ISCSI_TMF_RSP_NO_FAILOVER;
		break;
	default:
		rsp->response = ISCSI_TMF_RSP_REJECTED;
		break;
	}
	tmf->waiting = waiting;
	if (!waiting)
		tmf_send(tmf);
}

/*
 * PREEMPT AND ABORT: abort the preempted nexus's tasks on the LU, on its
 * reactor. The same for what another gateway node serving the LU asks
 * (LOGICAL UNIT RESET, CLEAR TASK SET, PREEMPT AND ABORT there): every nexus
 * (no initiator port) or an initiator port through every target port
 * (rel_port 0).
 */
struct preempt_abort {
	struct scsi_lu *lu;
	bool every_nexus;
	char iport[256];
	uint16_t rel_port;
};

static bool target_has_lu(const struct gw_target *t, const struct scsi_lu *lu)
{
	for (uint32_t i = 0; i < t->nluns; i++)
		if (gw_target_lu(t, i) == lu)
			return true;
	return false;
}

static void preempt_abort_conn(struct iscsi_conn *c, void *arg)
{
	struct preempt_abort *pa = arg;
	struct abort_filter f = { .lu = pa->lu };

	if (c->state != CONN_STATE_FFP || !c->sess || !c->sess->target || !c->sess->itn.port)
		return;
	if (!pa->every_nexus &&
	    ((pa->rel_port && c->sess->itn.port->rel_port_id != pa->rel_port) ||
	     strcmp(c->sess->itn.initiator_port, pa->iport) != 0))
		return;
	if (!target_has_lu(c->sess->target, pa->lu))
		return;
	f.target = c->sess->target;
	GW_NOTICE(COMP, "%s (%s): tasks on LUN %llu aborted (%s)", c->peer, c->sess->initiator,
		  (unsigned long long)scsi_lu_get_params(pa->lu)->lun,
		  pa->every_nexus ? "reset or task set cleared through another node" :
		  "PREEMPT AND ABORT");
	conn_abort_matching(c, &f, NULL, NULL);
}

static void preempt_abort_free(void *arg)
{
	free(arg);
}

static void preempt_abort_handler(struct scsi_lu *lu, const char *iport, uint16_t rel_port,
				  void *arg)
{
	struct gw *gw = arg;
	struct preempt_abort *pa = calloc(1, sizeof(*pa));

	if (!pa)
		return;
	pa->lu = lu;
	pa->every_nexus = iport == NULL;
	snprintf(pa->iport, sizeof(pa->iport), "%s", iport ? iport : "");
	pa->rel_port = rel_port;
	iscsi_sessions_foreach(gw, preempt_abort_conn, pa);
	/* the per-session messages were queued before this one on each reactor;
	 * free after all reactors ran theirs */
	gw_free_after_reactors(gw, preempt_abort_free, pa);
}

void iscsi_task_register_preempt_abort(struct gw *gw)
{
	scsi_set_abort_nexus_handler(preempt_abort_handler, gw);
}

void iscsi_conn_abort_tasks(struct iscsi_conn *c)
{
	struct list_head *pos, *n;

	list_for_each_safe(pos, n, &c->tasks) {
		struct iscsi_task *t = list_entry(pos, struct iscsi_task, link);

		t->tmf = NULL;
		if (t->state == TASK_STATE_EXEC) {
			if (!t->aborted)
				scsi_cmd_abort(&t->scsi);
			t->aborted = true;
			continue;
		}
		if (t->pending_tx)
			continue; /* freed by the datamover's flush callbacks */
		task_free(t);
	}
	while (!list_empty(&c->tmfs)) {
		struct iscsi_tmf *tmf = list_first_entry(&c->tmfs, struct iscsi_tmf, link);

		list_del(&tmf->link);
		iscsi_tx_pdu_free(tmf->pdu);
		free(tmf);
	}
}
