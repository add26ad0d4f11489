/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command entry: sense builders, the CDB dispatch table (which also feeds
 * REPORT SUPPORTED OPERATION CODES), unit-attention and reservation checks.
 */
#include <stddef.h>
#include <string.h>

#include "scsi/scsi_internal.h"
#include "common/bufpool.h"
#include "common/log.h"

/* ------------------------------------------------------------------ sense */

static void sense_fill(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq)
{
	memset(cmd->sense, 0, 18);
	cmd->sense[0] = 0x70;           /* current error, fixed format */
	cmd->sense[2] = key & 0x0f;
	cmd->sense[7] = 10;             /* additional sense length */
	cmd->sense[12] = asc;
	cmd->sense[13] = ascq;
	cmd->sense_len = 18;
	cmd->status = SCSI_STATUS_CHECK_CONDITION;
}

void scsi_cmd_set_sense(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq)
{
	sense_fill(cmd, key, asc, ascq);
}

void scsi_cmd_set_sense_info(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq,
			     uint32_t info)
{
	sense_fill(cmd, key, asc, ascq);
	cmd->sense[0] |= 0x80;          /* VALID: INFORMATION field is meaningful */
	put_be32(&cmd->sense[3], info);
}

void scsi_cmd_set_sense_field(struct scsi_cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq,
			      bool in_cdb, uint16_t field, int8_t bit)
{
	sense_fill(cmd, key, asc, ascq);
	cmd->sense[15] = 0x80;          /* SKSV */
	if (in_cdb)
		cmd->sense[15] |= 0x40; /* C/D */
	if (bit >= 0 && bit <= 7)
		cmd->sense[15] |= (uint8_t)(0x08 | bit); /* BPV + bit pointer */
	put_be16(&cmd->sense[16], field);
}

/* ------------------------------------------------------------- completion */

void scsi_complete(struct scsi_cmd *cmd)
{
	cmd->done(cmd);
}

void scsi_good(struct scsi_cmd *cmd)
{
	cmd->status = SCSI_STATUS_GOOD;
	cmd->sense_len = 0;
	scsi_complete(cmd);
}

void scsi_fail(struct scsi_cmd *cmd, uint8_t key, uint16_t asc)
{
	sense_fill(cmd, key, (uint8_t)(asc >> 8), (uint8_t)asc);
	scsi_complete(cmd);
}

void scsi_fail_cdb(struct scsi_cmd *cmd, uint16_t byte, int8_t bit)
{
	scsi_cmd_set_sense_field(cmd, SCSI_SK_ILLEGAL_REQUEST, 0x24, 0x00, true, byte, bit);
	scsi_complete(cmd);
}

void scsi_fail_param(struct scsi_cmd *cmd, uint16_t byte, int8_t bit)
{
	scsi_cmd_set_sense_field(cmd, SCSI_SK_ILLEGAL_REQUEST, 0x26, 0x00, false, byte, bit);
	scsi_complete(cmd);
}

void scsi_conflict(struct scsi_cmd *cmd)
{
	cmd->status = SCSI_STATUS_RESERVATION_CONFLICT;
	cmd->sense_len = 0;
	cmd->xfer_len = 0;
	scsi_complete(cmd);
}

void scsi_reply(struct scsi_cmd *cmd, const uint8_t *data, uint32_t len, uint32_t alloc_len)
{
	uint32_t n = len < alloc_len ? len : alloc_len;
	uint32_t copy = n < cmd->buf_len ? n : cmd->buf_len;

	if (copy && cmd->buf)
		memcpy(cmd->buf, data, copy);
	cmd->xfer_len = n;
	scsi_good(cmd);
}

/* ---------------------------------------------------------------- helpers */

bool scsi_lu_thin(const struct scsi_lu *lu)
{
	return lu->params.thin && lu->bdev->info.unmap_supported;
}

bool scsi_lu_write_protected(const struct scsi_lu *lu)
{
	return lu->params.readonly || lu->bdev->info.readonly || lu->swp;
}

void scsi_nexus_id(const struct scsi_itn *itn, const char **iport, uint16_t *rel_port)
{
	*iport = itn ? itn->initiator_port : "";
	*rel_port = (itn && itn->port) ? itn->port->rel_port_id : 0;
}

static bool avail_thin(const struct scsi_lu *lu)
{
	return scsi_lu_thin(lu);
}

/* --------------------------------------------------------- dispatch table */

/* Usage bytes for the 10/12/16-byte READ/WRITE family: DPO+FUA, GROUP NUMBER. */
#define U10(op, b1)  { op, b1, 0xff, 0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0x00 }
#define U12(op, b1)  { op, b1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x00 }
#define U16(op, b1)  { op, b1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, \
		       0xff, 0xff, 0xff, 0xff, 0x1f, 0x00 }

static const struct scsi_opdef op_table[] = {
	{ 0x00, 0, 6, 0, PRC_ALLOW, { 0x00, 0, 0, 0, 0, 0 },
	  scsi_spc_test_unit_ready, NULL, 5, "TEST UNIT READY" },
	{ 0x03, 0, 6, OPF_NO_UA | OPF_NO_LU | OPF_R2_OK, PRC_ALLOW, { 0x03, 0x01, 0, 0, 0xff, 0 },
	  scsi_spc_request_sense, NULL, 5, "REQUEST SENSE" },
	{ 0x08, 0, 6, 0, PRC_READ, { 0x08, 0x1f, 0xff, 0xff, 0xff, 0 },
	  scsi_sbc_read, NULL, 30, "READ(6)" },
	{ 0x0a, 0, 6, OPF_DOUT, PRC_WRITE, { 0x0a, 0x1f, 0xff, 0xff, 0xff, 0 },
	  scsi_sbc_write, NULL, 30, "WRITE(6)" },
	{ 0x12, 0, 6, OPF_NO_UA | OPF_NO_LU | OPF_R2_OK, PRC_ALLOW, { 0x12, 0x01, 0xff, 0xff, 0xff, 0 },
	  scsi_spc_inquiry, NULL, 5, "INQUIRY" },
	{ 0x15, 0, 6, OPF_DOUT, PRC_WRITE, { 0x15, 0x11, 0, 0, 0xff, 0 },
	  scsi_spc_mode_select, NULL, 5, "MODE SELECT(6)" },
	{ 0x16, 0, 6, 0, PRC_ALLOW, { 0x16, 0, 0, 0, 0, 0 },
	  scsi_pr_reserve6, NULL, 5, "RESERVE(6)" },
	{ 0x17, 0, 6, OPF_R2_OK, PRC_ALLOW, { 0x17, 0, 0, 0, 0, 0 },
	  scsi_pr_release6, NULL, 5, "RELEASE(6)" },
	{ 0x1a, 0, 6, 0, PRC_WRITE, { 0x1a, 0x08, 0xff, 0xff, 0xff, 0 },
	  scsi_spc_mode_sense, NULL, 5, "MODE SENSE(6)" },
	{ 0x1b, 0, 6, 0, PRC_WRITE, { 0x1b, 0x01, 0, 0x0f, 0xf7, 0 },
	  scsi_sbc_start_stop, NULL, 30, "START STOP UNIT" },
	{ 0x1e, 0, 6, 0, PRC_WRITE, { 0x1e, 0, 0, 0, 0x03, 0 },
	  scsi_sbc_prevent_allow, NULL, 5, "PREVENT ALLOW MEDIUM REMOVAL" },
	{ 0x25, 0, 10, OPF_R2_OK, PRC_ALLOW, { 0x25, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x01, 0 },
	  scsi_sbc_read_capacity10, NULL, 5, "READ CAPACITY(10)" },
	{ 0x28, 0, 10, 0, PRC_READ, U10(0x28, 0x18), scsi_sbc_read, NULL, 30, "READ(10)" },
	{ 0x2a, 0, 10, OPF_DOUT, PRC_WRITE, U10(0x2a, 0x18), scsi_sbc_write, NULL, 30, "WRITE(10)" },
	{ 0x2e, 0, 10, OPF_DOUT, PRC_WRITE,
	  U10(0x2e, 0x12), scsi_sbc_write, NULL, 30, "WRITE AND VERIFY(10)" },
	{ 0x2f, 0, 10, OPF_DOUT, PRC_READ, U10(0x2f, 0x12), scsi_sbc_verify, NULL, 30, "VERIFY(10)" },
	{ 0x34, 0, 10, 0, PRC_READ, U10(0x34, 0x02), scsi_sbc_prefetch, NULL, 30, "PRE-FETCH(10)" },
	{ 0x35, 0, 10, 0, PRC_WRITE, U10(0x35, 0x02), scsi_sbc_sync_cache, NULL, 60,
	  "SYNCHRONIZE CACHE(10)" },
	{ 0x37, 0, 10, 0, PRC_WRITE, { 0x37, 0, 0x1f, 0, 0, 0, 0, 0xff, 0xff, 0 },
	  scsi_sbc_read_defect_data, NULL, 5, "READ DEFECT DATA(10)" },
	{ 0x41, 0, 10, OPF_DOUT, PRC_WRITE,
	  U10(0x41, 0x08), scsi_sbc_write_same, NULL, 120, "WRITE SAME(10)" },
	{ 0x42, 0, 10, OPF_DOUT, PRC_WRITE, { 0x42, 0, 0, 0, 0, 0, 0x1f, 0xff, 0xff, 0 },
	  scsi_sbc_unmap, avail_thin, 120, "UNMAP" },
	{ 0x55, 0, 10, OPF_DOUT, PRC_WRITE, { 0x55, 0x11, 0, 0, 0, 0, 0, 0xff, 0xff, 0 },
	  scsi_spc_mode_select, NULL, 5, "MODE SELECT(10)" },
	{ 0x56, 0, 10, 0, PRC_ALLOW, { 0x56, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	  scsi_pr_reserve6, NULL, 5, "RESERVE(10)" },
	{ 0x57, 0, 10, OPF_R2_OK, PRC_ALLOW, { 0x57, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	  scsi_pr_release6, NULL, 5, "RELEASE(10)" },
	{ 0x5a, 0, 10, 0, PRC_WRITE, { 0x5a, 0x18, 0xff, 0xff, 0, 0, 0, 0xff, 0xff, 0 },
	  scsi_spc_mode_sense, NULL, 5, "MODE SENSE(10)" },
	{ 0x5e, 0x00, 10, OPF_SA, PRC_ALLOW, { 0x5e, 0x00, 0, 0, 0, 0, 0, 0xff, 0xff, 0 },
	  scsi_pr_in, NULL, 5, "PERSISTENT RESERVE IN / READ KEYS" },
	{ 0x5e, 0x01, 10, OPF_SA, PRC_ALLOW, { 0x5e, 0x01, 0, 0, 0, 0, 0, 0xff, 0xff, 0 },
	  scsi_pr_in, NULL, 5, "PERSISTENT RESERVE IN / READ RESERVATION" },
	{ 0x5e, 0x02, 10, OPF_SA, PRC_ALLOW, { 0x5e, 0x02, 0, 0, 0, 0, 0, 0xff, 0xff, 0 },
	  scsi_pr_in, NULL, 5, "PERSISTENT RESERVE IN / REPORT CAPABILITIES" },
	{ 0x5e, 0x03, 10, OPF_SA, PRC_ALLOW, { 0x5e, 0x03, 0, 0, 0, 0, 0, 0xff, 0xff, 0 },
	  scsi_pr_in, NULL, 5, "PERSISTENT RESERVE IN / READ FULL STATUS" },
#define PROUT(sa, nm) \
	{ 0x5f, sa, 10, OPF_SA | OPF_DOUT, PRC_ALLOW, \
	  { 0x5f, sa, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff, 0 }, \
	  scsi_pr_out, NULL, 5, "PERSISTENT RESERVE OUT / " nm }
	PROUT(0x00, "REGISTER"),
	PROUT(0x01, "RESERVE"),
	PROUT(0x02, "RELEASE"),
	PROUT(0x03, "CLEAR"),
	PROUT(0x04, "PREEMPT"),
	PROUT(0x05, "PREEMPT AND ABORT"),
	PROUT(0x06, "REGISTER AND IGNORE EXISTING KEY"),
#undef PROUT
	{ 0x83, 0x00, 16, OPF_SA | OPF_DOUT, PRC_WRITE,
	  { 0x83, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_xcopy_extended_copy, NULL, 300, "EXTENDED COPY(LID1)" },
	{ 0x84, 0x00, 16, OPF_SA, PRC_ALLOW,
	  { 0x84, 0x00, 0xff, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_xcopy_receive_copy_results, NULL, 5, "RECEIVE COPY RESULTS / COPY STATUS" },
	{ 0x84, 0x03, 16, OPF_SA, PRC_ALLOW,
	  { 0x84, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_xcopy_receive_copy_results, NULL, 5, "RECEIVE COPY RESULTS / OPERATING PARAMETERS" },
	{ 0x88, 0, 16, 0, PRC_READ, U16(0x88, 0x18), scsi_sbc_read, NULL, 30, "READ(16)" },
	{ 0x89, 0, 16, OPF_DOUT, PRC_WRITE,
	  { 0x89, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0xff, 0x1f, 0 },
	  scsi_sbc_compare_and_write, NULL, 30, "COMPARE AND WRITE" },
	{ 0x8a, 0, 16, OPF_DOUT, PRC_WRITE, U16(0x8a, 0x18), scsi_sbc_write, NULL, 30, "WRITE(16)" },
	{ 0x8b, 0, 16, OPF_DOUT, PRC_WRITE, U16(0x8b, 0x18), scsi_sbc_orwrite, NULL, 30, "ORWRITE(16)" },
	{ 0x8e, 0, 16, OPF_DOUT, PRC_WRITE,
	  U16(0x8e, 0x12), scsi_sbc_write, NULL, 30, "WRITE AND VERIFY(16)" },
	{ 0x8f, 0, 16, OPF_DOUT, PRC_READ, U16(0x8f, 0x12), scsi_sbc_verify, NULL, 30, "VERIFY(16)" },
	{ 0x90, 0, 16, 0, PRC_READ, U16(0x90, 0x02), scsi_sbc_prefetch, NULL, 30, "PRE-FETCH(16)" },
	{ 0x91, 0, 16, 0, PRC_WRITE, U16(0x91, 0x02), scsi_sbc_sync_cache, NULL, 60,
	  "SYNCHRONIZE CACHE(16)" },
	{ 0x93, 0, 16, OPF_DOUT, PRC_WRITE,
	  U16(0x93, 0x09), scsi_sbc_write_same, NULL, 120, "WRITE SAME(16)" },
	{ 0x9c, 0, 16, OPF_DOUT, PRC_WRITE,
	  { 0x9c, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0xff, 0xff, 0x1f, 0 },
	  scsi_sbc_write_atomic, NULL, 30, "WRITE ATOMIC(16)" },
	{ 0x9e, 0x10, 16, OPF_SA | OPF_R2_OK, PRC_ALLOW,
	  { 0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_sbc_read_capacity16, NULL, 5, "READ CAPACITY(16)" },
	{ 0x9e, 0x12, 16, OPF_SA, PRC_READ,
	  { 0x9e, 0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_sbc_get_lba_status, NULL, 5, "GET LBA STATUS" },
	{ 0xa0, 0, 12, OPF_NO_UA | OPF_NO_LU | OPF_R2_OK, PRC_ALLOW,
	  { 0xa0, 0, 0xff, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_spc_report_luns, NULL, 5, "REPORT LUNS" },
	{ 0xa3, 0x0a, 12, OPF_SA | OPF_R2_OK, PRC_ALLOW,
	  { 0xa3, 0xea, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_alua_rtpg, NULL, 5, "REPORT TARGET PORT GROUPS" },
	{ 0xa3, 0x0c, 12, OPF_SA | OPF_R2_OK, PRC_ALLOW,
	  { 0xa3, 0x0c, 0x87, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_spc_rsoc, NULL, 5, "REPORT SUPPORTED OPERATION CODES" },
	{ 0xa3, 0x0d, 12, OPF_SA | OPF_R2_OK, PRC_ALLOW,
	  { 0xa3, 0x0d, 0x80, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_spc_rstmf, NULL, 5, "REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS" },
	{ 0xa4, 0x0a, 12, OPF_SA | OPF_DOUT, PRC_WRITE,
	  { 0xa4, 0x0a, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_alua_stpg, NULL, 5, "SET TARGET PORT GROUPS" },
	{ 0xa8, 0, 12, 0, PRC_READ, U12(0xa8, 0x18), scsi_sbc_read, NULL, 30, "READ(12)" },
	{ 0xaa, 0, 12, OPF_DOUT, PRC_WRITE, U12(0xaa, 0x18), scsi_sbc_write, NULL, 30, "WRITE(12)" },
	{ 0xae, 0, 12, OPF_DOUT, PRC_WRITE,
	  U12(0xae, 0x12), scsi_sbc_write, NULL, 30, "WRITE AND VERIFY(12)" },
	{ 0xaf, 0, 12, OPF_DOUT, PRC_READ, U12(0xaf, 0x12), scsi_sbc_verify, NULL, 30, "VERIFY(12)" },
	{ 0xb7, 0, 12, 0, PRC_WRITE, { 0xb7, 0x1f, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0 },
	  scsi_sbc_read_defect_data, NULL, 5, "READ DEFECT DATA(12)" },
};

const struct scsi_opdef *scsi_op_table(size_t *n)
{
	*n = sizeof(op_table) / sizeof(op_table[0]);
	return op_table;
}

#define OP_NONE 0xffu
#define OP_TABLE_LEN (sizeof(op_table) / sizeof(op_table[0]))
_Static_assert(OP_TABLE_LEN < OP_NONE, "op_first holds table indexes in a byte");

/* The first row of each opcode (the rows of an opcode are adjacent), OP_NONE: unknown. */
static uint8_t op_first[256];

static void __attribute__((constructor)) op_first_init(void)
{
	memset(op_first, OP_NONE, sizeof(op_first));
	for (size_t i = OP_TABLE_LEN; i-- > 0;)
		op_first[op_table[i].op] = (uint8_t)i;
}

const struct scsi_opdef *scsi_find_op(uint8_t op, uint8_t sa, bool *op_known)
{
	size_t i = op_first[op];

	*op_known = i != OP_NONE;
	for (; i < OP_TABLE_LEN && op_table[i].op == op; i++) {
		const struct scsi_opdef *d = &op_table[i];

		if (!(d->flags & OPF_SA) || d->sa == sa)
			return d;
	}
	return NULL;
}

/* ----------------------------------------------------------- submission */

/* Reports (and clears) the oldest unit attention; true if one was reported. */
static bool check_ua(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	const char *iport;
	uint16_t rel, asc;
	bool found;

	if (atomic_load_explicit(&lu->ua_pending, memory_order_acquire) == 0)
		return false;
	scsi_nexus_id(cmd->itn, &iport, &rel);
	pthread_mutex_lock(&lu->lock);
	found = scsi_ua_pop(lu, iport, rel, &asc);
	pthread_mutex_unlock(&lu->lock);
	if (!found)
		return false;
	GW_DEBUG(SCSI_LOG, "lun %llu: unit attention %02x/%02x to %s",
		 (unsigned long long)lu->params.lun, asc >> 8, asc & 0xff, iport);
	scsi_fail(cmd, SCSI_SK_UNIT_ATTENTION, asc);
	return true;
}

/*
 * Commands a logical unit whose capacity is not known yet (a backend that
 * never answered) still serves; anything else is NOT READY (SPC-4 4.5.1).
 */
static bool needs_no_medium(uint8_t op)
{
	switch (op) {
	case 0x00: case 0x03: case 0x12: case 0xa0:     /* TUR, REQUEST SENSE, INQUIRY, REPORT LUNS */
	case 0x15: case 0x55: case 0x1a: case 0x5a:     /* MODE SELECT / SENSE */
	case 0x16: case 0x17: case 0x56: case 0x57:     /* RESERVE / RELEASE */
	case 0x5e: case 0x5f:                           /* PERSISTENT RESERVE IN / OUT */
	case 0xa3: case 0xa4:                           /* MAINTENANCE IN / OUT */
	case 0x1b: case 0x1e: case 0x84:                /* START STOP, PREVENT ALLOW, copy results */
		return true;
	default:
		return false;
	}
}

void scsi_cmd_abort(struct scsi_cmd *cmd)
{
	/* the only commands that wait on nothing but an answer: held STPGs, cluster changes */
	scsi_alua_cmd_abort(cmd);
	scsi_cluster_cmd_abort(cmd);
}

void scsi_cmd_submit(struct scsi_cmd *cmd)
{
	uint8_t op = cmd->cdb[0];
	uint8_t sa = cmd->cdb[1] & 0x1f;
	const struct scsi_opdef *def;
	bool known;

	cmd->status = SCSI_STATUS_GOOD;
	cmd->sense_len = 0;
	cmd->xfer_len = 0;
	cmd->cluster_reruns = 0;
	/* the private area but its bdev_io, which is set up when it is submitted */
	gw_zero(&cmd_priv(cmd)->iov, sizeof(struct scsi_priv) - offsetof(struct scsi_priv, iov));
	cmd_priv(cmd)->cmd = cmd;

	def = scsi_find_op(op, sa, &known);

	if (!cmd->lu) {
		if (def && (def->flags & OPF_NO_LU)) {
			def->fn(cmd);
			return;
		}
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_LU_NOT_SUPPORTED);
		return;
	}

	/* another node changed the LU's shared state: catch up (one atomic load) */
	if (cmd->lu->sh && lu_shared_stale(cmd->lu))
		scsi_lu_shared_refresh(cmd->lu);

	if (!(def && (def->flags & OPF_NO_UA)) && check_ua(cmd))
		return;

	/* ALUA: the asymmetric access state of the port this command came through */
	if (scsi_alua_check(cmd))
		return;

	if (!def || (def->avail && !def->avail(cmd->lu))) {
		if (known && def == NULL) {
			/* known opcode, unknown service action: field pointer at byte 1 */
			scsi_fail_cdb(cmd, 1, 4);
			return;
		}
		GW_DEBUG(SCSI_LOG, "lun %llu: unsupported opcode 0x%02x",
			 (unsigned long long)cmd->lu->params.lun, op);
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_INVALID_OPCODE);
		return;
	}

	if (cmd->cdb_len < def->cdb_len) {
		scsi_fail_cdb(cmd, 0, 7);
		return;
	}
	/* CONTROL byte: NACA and the obsolete LINK bit are not supported. */
	if (cmd->cdb[def->cdb_len - 1] & 0x05) {
		scsi_fail_cdb(cmd, (uint16_t)(def->cdb_len - 1),
			      (cmd->cdb[def->cdb_len - 1] & 0x04) ? 2 : 0);
		return;
	}

	/*
	 * Without the W bit nothing was sent: the buffer holds whatever the
	 * datamover's pool had in it (another command's data), never write data
	 * or a parameter list. The command sees no data-out at all.
	 */
	if ((def->flags & OPF_DOUT) && !cmd->data_out) {
		cmd->buf = NULL;
		cmd->buf_len = 0;
	}

	if (atomic_load_explicit(&cmd->lu->nblocks, memory_order_relaxed) == 0 &&
	    !needs_no_medium(op)) {
		scsi_fail(cmd, SCSI_SK_NOT_READY, ASC_LU_BECOMING_READY);
		return;
	}

	if (atomic_load_explicit(&cmd->lu->res_active, memory_order_acquire) &&
	    scsi_pr_check_conflict(cmd, def)) {
		scsi_conflict(cmd);
		return;
	}

	def->fn(cmd);
}
