/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Third-party copy (SPC-4 6.4, 6.18): EXTENDED COPY (LID1) with block device
 * to block device segments between LUs of the same target, RECEIVE COPY
 * RESULTS (COPY STATUS, OPERATING PARAMETERS) and the Third-party Copy VPD
 * page (8Fh).
 *
 * A copy target (CSCD) is an identification descriptor (E4h) naming an LU by
 * the NAA designator of its VPD 83h page; it is looked up among the LUs the
 * nexus can see (cmd->itn->luns). The whole parameter list is validated
 * before anything is copied. Data moves in chunks of SCSI_XCOPY_CHUNK_BYTES
 * through a bounce buffer: each chunk is read from the source LU as a read
 * and written to the destination LU as a write, both through the gate of
 * their LU (scsi_sbc.c), by two child scsi_cmds that carry the bdev_io and
 * the gate state. Nothing blocks the reactor.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsi/scsi_internal.h"
#include "common/log.h"

#define XC_HDR_LEN      16
#define XC_CSCD_LEN     32
#define XC_SEG_B2B_LEN  28
#define XC_CSCD_ID_E4   0xe4
#define XC_SEG_B2B      0x02

/* COPY STATUS: COPY MANAGER STATUS values */
#define XC_IN_PROGRESS  0x00
#define XC_DONE_GOOD    0x01
#define XC_DONE_ERROR   0x02

/* A copy status kept for RECEIVE COPY RESULTS (on lu->xcopy_status). */
struct xcopy_status {
	struct list_head link;
	char iport[256];
	uint16_t rel_port;
	uint8_t list_id;
	uint8_t state;          /* XC_* */
	uint16_t segs_done;
	uint64_t bytes_done;
};

struct xc_seg {
	struct scsi_lu *src, *dst;
	uint64_t src_lba, dst_lba;
	uint32_t nblocks;
};

/* One EXTENDED COPY in flight. */
struct xcopy {
	struct scsi_cmd *cmd;           /* the EXTENDED COPY */
	struct scsi_cmd rd, wr;         /* children: gate + bdev_io on src / dst */
	struct xcopy_status *st;        /* NULL when the list ID is not kept */
	struct xc_seg seg[SCSI_XCOPY_MAX_SEGS];
	uint32_t nseg;
	uint32_t cur;                   /* segment being copied */
	uint32_t done;                  /* blocks of seg[cur] copied */
	uint32_t chunk;                 /* blocks in the current chunk */
	uint64_t bytes;                 /* copied so far */
	void *buf;
};

/* ------------------------------------------------------------------ sense */

/* COPY ABORTED with the failing segment number in COMMAND-SPECIFIC INFORMATION. */
static void fail_copy(struct scsi_cmd *cmd, uint16_t asc, uint32_t segment)
{
	scsi_cmd_set_sense(cmd, SCSI_SK_COPY_ABORTED, (uint8_t)(asc >> 8), (uint8_t)asc);
	put_be32(&cmd->sense[8], segment);
	scsi_complete(cmd);
}

/* ------------------------------------------------------------ copy status */

static struct xcopy_status *status_find(struct scsi_lu *lu, const char *iport, uint16_t rel,
					uint8_t list_id)
{
	struct list_head *pos;

	list_for_each(pos, &lu->xcopy_status) {
		struct xcopy_status *s = list_entry(pos, struct xcopy_status, link);

		if (s->list_id == list_id && s->rel_port == rel && strcmp(s->iport, iport) == 0)
			return s;
	}
	return NULL;
}

/*
 * Registers a copy with a kept list ID. Returns 0, -EBUSY when the nexus
 * already runs a copy with that list ID, -ENOSPC when every slot holds a copy
 * in progress, -ENOMEM.
 */
static int status_start(struct scsi_cmd *cmd, uint8_t list_id, struct xcopy_status **out)
{
	struct scsi_lu *lu = cmd->lu;
	struct xcopy_status *s, *old = NULL;
	struct list_head *pos;
	const char *iport;
	uint16_t rel;
	int rc = 0;

	scsi_nexus_id(cmd->itn, &iport, &rel);
	pthread_mutex_lock(&lu->lock);
	s = status_find(lu, iport, rel, list_id);
	if (s) {
		if (s->state == XC_IN_PROGRESS) {
			rc = -EBUSY;
			goto out;
		}
		list_del(&s->link);     /* reused: start afresh at the tail */
		lu->nxcopy_status--;
	} else {
		if (lu->nxcopy_status >= SCSI_XCOPY_STATUS_MAX) {
			list_for_each(pos, &lu->xcopy_status) {
				struct xcopy_status *e = list_entry(pos, struct xcopy_status, link);

				if (e->state != XC_IN_PROGRESS) {
					old = e;
					break;
				}
			}
			if (!old) {
				rc = -ENOSPC;
				goto out;
			}
			list_del(&old->link);
			lu->nxcopy_status--;
			s = old;        /* recycle the oldest finished one */
		} else {
			s = malloc(sizeof(*s));
			if (!s) {
				rc = -ENOMEM;
				goto out;
			}
		}
	}
	memset(s, 0, sizeof(*s));
	snprintf(s->iport, sizeof(s->iport), "%s", iport);
	s->rel_port = rel;
	s->list_id = list_id;
	s->state = XC_IN_PROGRESS;
	list_add_tail(&s->link, &lu->xcopy_status);
	lu->nxcopy_status++;
	*out = s;
out:
	pthread_mutex_unlock(&lu->lock);
	return rc;
}

static void status_update(struct xcopy *xc, uint8_t state)
{
	struct scsi_lu *lu = xc->cmd->lu;

	if (!xc->st)
		return;
	pthread_mutex_lock(&lu->lock);
	xc->st->state = state;
	xc->st->segs_done = (uint16_t)xc->cur;
	xc->st->bytes_done = xc->bytes;
	pthread_mutex_unlock(&lu->lock);
}

void scsi_xcopy_status_free(struct scsi_lu *lu)
{
	struct list_head *pos, *n;

	list_for_each_safe(pos, n, &lu->xcopy_status) {
		list_del(pos);
		free(list_entry(pos, struct xcopy_status, link));
	}
	lu->nxcopy_status = 0;
}

/* ------------------------------------------------------------- the copy */

static void xc_next(struct xcopy *xc);

static void xc_finish(struct xcopy *xc, bool ok, uint16_t asc)
{
	struct scsi_cmd *cmd = xc->cmd;
	uint32_t segment = xc->cur;

	status_update(xc, ok ? XC_DONE_GOOD : XC_DONE_ERROR);
	free(xc->buf);
	free(xc);
	if (ok)
		scsi_good(cmd);
	else
		fail_copy(cmd, asc, segment);
}

static void xc_io_failed(struct xcopy *xc, const char *what, int err)
{
	struct xc_seg *sg = &xc->seg[xc->cur];

	GW_ERR(SCSI_LOG, "lun %llu: EXTENDED COPY segment %u: %s error at LBA %llu: %s",
	       (unsigned long long)xc->cmd->lu->params.lun, xc->cur, what,
	       (unsigned long long)(what[0] == 'r' ? sg->src_lba : sg->dst_lba) + xc->done,
	       strerror(-err));
	xc_finish(xc, false, 0x0d01);   /* THIRD PARTY DEVICE FAILURE */
}

static void xc_write_done(struct bdev_io *io)
{
	struct scsi_cmd *child = io->ctx;
	struct xcopy *xc = child->ctx;
	struct xc_seg *sg = &xc->seg[xc->cur];

	scsi_sbc_gate_exit(child);
	if (io->result < 0) {
		xc_io_failed(xc, "write", io->result);
		return;
	}
	xc->done += xc->chunk;
	xc->bytes += (uint64_t)xc->chunk * sg->src->block_size;
	if (xc->done == sg->nblocks) {
		xc->cur++;
		xc->done = 0;
	}
	status_update(xc, XC_IN_PROGRESS);
	xc_next(xc);
}

static void xc_read_done(struct bdev_io *io);

/* The current chunk: read it from the source, or write it to the destination. */
static void xc_submit(struct scsi_cmd *child, bool write)
{
	struct xcopy *xc = child->ctx;
	struct xc_seg *sg = &xc->seg[xc->cur];
	struct scsi_lu *lu = write ? sg->dst : sg->src;
	uint64_t lba = (write ? sg->dst_lba : sg->src_lba) + xc->done;
	uint32_t bs = lu->block_size;
	int rc;

	rc = scsi_sbc_submit(child, write ? BDEV_OP_WRITE : BDEV_OP_READ, lba * bs,
			     (uint64_t)xc->chunk * bs, xc->buf, write && !lu->wce ? BDEV_IO_FUA : 0,
			     write ? xc_write_done : xc_read_done);
	if (rc < 0) {
		scsi_sbc_gate_exit(child);
		xc_io_failed(xc, write ? "write" : "read", rc);
	}
}

static void xc_write_start(struct scsi_cmd *child)
{
	xc_submit(child, true);
}

static void xc_read_done(struct bdev_io *io)
{
	struct scsi_cmd *child = io->ctx;
	struct xcopy *xc = child->ctx;

	scsi_sbc_gate_exit(child);
	if (io->result < 0) {
		xc_io_failed(xc, "read", io->result);
		return;
	}
	if (scsi_sbc_gate_enter(&xc->wr, GATE_WRITE, xc_write_start))
		xc_write_start(&xc->wr);
}

static void xc_read_start(struct scsi_cmd *child)
{
	xc_submit(child, false);
}

static void child_init(struct xcopy *xc, struct scsi_cmd *child, struct scsi_lu *lu)
{
	memset(child, 0, sizeof(*child));
	child->itn = xc->cmd->itn;
	child->lu = lu;
	child->ctx = xc;
	cmd_priv(child)->cmd = child;
}

static void xc_next(struct xcopy *xc)
{
	struct xc_seg *sg;
	uint32_t max;

	while (xc->cur < xc->nseg && xc->seg[xc->cur].nblocks == 0)
		xc->cur++;
	if (xc->cur == xc->nseg) {
		xc_finish(xc, true, 0);
		return;
	}
	sg = &xc->seg[xc->cur];
	max = SCSI_XCOPY_CHUNK_BYTES / sg->src->block_size;
	xc->chunk = sg->nblocks - xc->done < max ? sg->nblocks - xc->done : max;
	child_init(xc, &xc->rd, sg->src);
	child_init(xc, &xc->wr, sg->dst);
	if (scsi_sbc_gate_enter(&xc->rd, GATE_READ, xc_read_start))
		xc_read_start(&xc->rd);
}

/* --------------------------------------------------------------- parsing */

/* The LU named by an identification CSCD descriptor, or NULL. */
static struct scsi_lu *cscd_lookup(const struct scsi_cmd *cmd, const uint8_t *d)
{
	const struct scsi_itn *itn = cmd->itn;
	uint8_t code_set = d[4] & 0x0f, assoc = (d[5] >> 4) & 0x03, type = d[5] & 0x0f;
	uint8_t len = d[7];
	uint32_t i;

	/* NAA, binary, associated with the logical unit, as our VPD 83h gives it */
	if (code_set != 1 || assoc != 0 || type != 3 || len != 16)
		return NULL;
	if (!itn || !itn->luns) {
		/* no LUN map (unit tests of a lone LU): only the LU itself */
		return memcmp(&d[8], cmd->lu->params.naa, 16) == 0 ? cmd->lu : NULL;
	}
	for (i = 0; i < itn->nluns; i++) {
		struct scsi_lu *lu = scsi_itn_lu(itn, i);

		if (lu && memcmp(&d[8], lu->params.naa, 16) == 0)
			return lu;
	}
	return NULL;
}

/* Would a READ (write=false) or WRITE by this nexus to `lu` conflict? */
static bool cscd_conflict(const struct scsi_cmd *cmd, struct scsi_lu *lu, bool write)
{
	struct scsi_cmd *probe;
	const struct scsi_opdef *def;
	bool known, conflict;

	if (!atomic_load(&lu->res_active))
		return false;
	def = scsi_find_op(write ? 0x2a : 0x28, 0, &known);
	probe = calloc(1, sizeof(*probe));
	if (!probe || !def) {
		free(probe);
		return true;
	}
	probe->itn = cmd->itn;
	probe->lu = lu;
	probe->cdb[0] = def->op;
	conflict = scsi_pr_check_conflict(probe, def);
	free(probe);
	return conflict;
}

/*
 * Validates the parameter list into xc. Returns true to go on; false when
 * the command has been completed with an error.
 */
static bool xc_parse(struct scsi_cmd *cmd, struct xcopy *xc, uint32_t plen)
{
	const uint8_t *p = cmd->buf;
	uint32_t cscd_len = get_be16(&p[2]), seg_len = get_be32(&p[8]);
	uint32_t inline_len = get_be32(&p[12]);
	struct scsi_lu *cscd[SCSI_XCOPY_MAX_CSCD];
	uint32_t ncscd, off, i;

	if ((uint64_t)XC_HDR_LEN + cscd_len + seg_len + inline_len > plen ||
	    cscd_len + (uint64_t)seg_len > SCSI_XCOPY_MAX_DESC_LEN) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return false;
	}
	if (inline_len) {                       /* MAXIMUM INLINE DATA LENGTH 0 */
		scsi_fail_param(cmd, 12, -1);
		return false;
	}
	if (cscd_len % XC_CSCD_LEN) {
		/* only 32-byte CSCD descriptors are implemented */
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_UNSUPPORTED_CSCD_TYPE);
		return false;
	}
	ncscd = cscd_len / XC_CSCD_LEN;
	if (ncscd > SCSI_XCOPY_MAX_CSCD) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_TOO_MANY_CSCD);
		return false;
	}
	/* count the segment descriptors before looking into them */
	for (off = XC_HDR_LEN + cscd_len, i = 0; off + 4 <= XC_HDR_LEN + cscd_len + seg_len; i++)
		off += 4 + get_be16(&p[off + 2]);
	if (i > SCSI_XCOPY_MAX_SEGS) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_TOO_MANY_SEGMENTS);
		return false;
	}

	for (i = 0; i < ncscd; i++) {
		const uint8_t *d = &p[XC_HDR_LEN + XC_CSCD_LEN * i];
		uint16_t at = (uint16_t)(XC_HDR_LEN + XC_CSCD_LEN * i);

		if (d[0] != XC_CSCD_ID_E4) {
			scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_UNSUPPORTED_CSCD_TYPE);
			return false;
		}
		/* byte 1 bits 7-5 (LU ID TYPE, NUL) are obsolete in SPC-4: ignored */
		if (d[1] & 0x1f) {              /* PERIPHERAL DEVICE TYPE: block devices only */
			scsi_fail_param(cmd, (uint16_t)(at + 1), 4);
			return false;
		}
		cscd[i] = cscd_lookup(cmd, d);
		if (cscd[i] && get_be24(&d[29]) != cscd[i]->block_size) {
			scsi_fail_param(cmd, (uint16_t)(at + 29), -1);
			return false;
		}
	}

	xc->nseg = 0;
	for (off = XC_HDR_LEN + cscd_len; off < XC_HDR_LEN + cscd_len + seg_len;) {
		const uint8_t *d = &p[off];
		uint32_t n = xc->nseg;
		uint16_t si, di;
		struct xc_seg *sg = &xc->seg[n];
		uint64_t blocks;

		if (d[0] != XC_SEG_B2B) {
			scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_UNSUPPORTED_SEG_TYPE);
			return false;
		}
		if (off + 4 > XC_HDR_LEN + cscd_len + seg_len) {
			/* the list ends inside a descriptor's header */
			scsi_fail_param(cmd, 8, -1);
			return false;
		}
		if (get_be16(&d[2]) != XC_SEG_B2B_LEN - 4 ||
		    off + XC_SEG_B2B_LEN > XC_HDR_LEN + cscd_len + seg_len) {
			scsi_fail_param(cmd, (uint16_t)(off + 2), -1);
			return false;
		}
		si = get_be16(&d[4]);
		di = get_be16(&d[6]);
		if (si >= ncscd || di >= ncscd || !cscd[si] || !cscd[di]) {
			/* an index outside the list or an LU this nexus cannot see */
			fail_copy(cmd, ASC_COPY_TARGET_UNREACHABLE, n);
			return false;
		}
		sg->src = cscd[si];
		sg->dst = cscd[di];
		sg->nblocks = get_be16(&d[10]);
		sg->src_lba = get_be64(&d[12]);
		sg->dst_lba = get_be64(&d[20]);
		if (sg->src->block_size != sg->dst->block_size) {
			scsi_fail_param(cmd, (uint16_t)(off + 1), 1);   /* DC cannot help */
			return false;
		}
		blocks = sg->nblocks;
		if (blocks * sg->src->block_size > SCSI_XCOPY_MAX_SEG_BYTES) {
			scsi_fail_param(cmd, (uint16_t)(off + 10), -1);
			return false;
		}
		if (sg->src_lba > sg->src->nblocks || blocks > sg->src->nblocks - sg->src_lba ||
		    sg->dst_lba > sg->dst->nblocks || blocks > sg->dst->nblocks - sg->dst_lba) {
			fail_copy(cmd, ASC_NO_ADDITIONAL, n);
			return false;
		}
		if (scsi_lu_write_protected(sg->dst)) {
			fail_copy(cmd, ASC_WRITE_PROTECTED, n);
			return false;
		}
		if ((sg->src != cmd->lu && cscd_conflict(cmd, sg->src, false)) ||
		    (sg->dst != cmd->lu && cscd_conflict(cmd, sg->dst, true))) {
			scsi_conflict(cmd);
			return false;
		}
		xc->nseg++;
		off += XC_SEG_B2B_LEN;
	}
	return true;
}

/* ---------------------------------------------------------- EXTENDED COPY */

void scsi_xcopy_extended_copy(struct scsi_cmd *cmd)
{
	uint32_t plen = get_be32(&cmd->cdb[10]);
	struct xcopy *xc;
	uint8_t usage;
	int rc;

	cmd->xfer_len = plen;
	if (plen == 0) {                        /* nothing to do (SPC-4 6.4.1) */
		scsi_good(cmd);
		return;
	}
	if (plen < XC_HDR_LEN || plen > cmd->buf_len || !cmd->buf) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return;
	}
	usage = (cmd->buf[1] >> 3) & 0x03;
	if (usage == 1) {                       /* LIST ID USAGE 01b is reserved */
		scsi_fail_param(cmd, 1, 4);
		return;
	}
	if (usage == 3 && cmd->buf[0] != 0) {   /* no list ID: it must be zero */
		scsi_fail_param(cmd, 0, -1);
		return;
	}
	if (cmd->buf[1] & 0x20) {               /* STR: no stream devices */
		scsi_fail_param(cmd, 1, 5);
		return;
	}
	xc = calloc(1, sizeof(*xc));
	if (!xc) {
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	xc->cmd = cmd;
	if (!xc_parse(cmd, xc, plen)) {
		free(xc);
		return;
	}
	xc->buf = malloc(SCSI_XCOPY_CHUNK_BYTES);
	if (!xc->buf) {
		free(xc);
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	if (usage != 3) {
		rc = status_start(cmd, cmd->buf[0], &xc->st);
		if (rc < 0) {
			free(xc->buf);
			free(xc);
			if (rc == -EBUSY)
				scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_OPERATION_IN_PROGRESS);
			else if (rc == -ENOSPC)
				scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_INSUFFICIENT_RESOURCES);
			else
				scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
			return;
		}
	}
	xc_next(xc);
}

/* --------------------------------------------------- RECEIVE COPY RESULTS */

static void rcr_copy_status(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	uint32_t alloc = get_be32(&cmd->cdb[10]);
	struct xcopy_status *s;
	const char *iport;
	uint16_t rel;
	uint8_t d[12];
	uint64_t count;

	memset(d, 0, sizeof(d));
	scsi_nexus_id(cmd->itn, &iport, &rel);
	pthread_mutex_lock(&lu->lock);
	s = status_find(lu, iport, rel, cmd->cdb[2]);
	if (!s) {
		pthread_mutex_unlock(&lu->lock);
		scsi_fail_cdb(cmd, 2, -1);      /* no such list ID from this nexus */
		return;
	}
	put_be32(&d[0], sizeof(d) - 4);
	d[4] = s->state;                        /* HDD 0: no held data */
	put_be16(&d[5], s->segs_done);
	count = s->bytes_done;
	if (count > UINT32_MAX) {
		d[7] = 0x01;                    /* TRANSFER COUNT UNITS: KiB */
		count >>= 10;
	}
	put_be32(&d[8], (uint32_t)count);
	if (s->state != XC_IN_PROGRESS) {
		/* reported once finished: the slot is free again */
		list_del(&s->link);
		lu->nxcopy_status--;
		free(s);
	}
	pthread_mutex_unlock(&lu->lock);
	scsi_reply(cmd, d, sizeof(d), alloc);
}

static void rcr_op_params(struct scsi_cmd *cmd)
{
	uint32_t alloc = get_be32(&cmd->cdb[10]);
	uint32_t bs = cmd->lu->block_size;
	uint8_t d[46], g = 0;

	memset(d, 0, sizeof(d));
	while ((1u << g) < bs)
		g++;
	put_be32(&d[0], sizeof(d) - 4);
	d[4] = 0x01;                            /* SNLID: LIST ID USAGE 11b supported */
	put_be16(&d[8], SCSI_XCOPY_MAX_CSCD);
	put_be16(&d[10], SCSI_XCOPY_MAX_SEGS);
	put_be32(&d[12], SCSI_XCOPY_MAX_DESC_LEN);
	put_be32(&d[16], SCSI_XCOPY_MAX_SEG_BYTES);
	/* inline data 0, held data 0, stream transfer size 0 */
	put_be16(&d[34], SCSI_XCOPY_STATUS_MAX);        /* TOTAL CONCURRENT COPIES */
	d[36] = SCSI_XCOPY_STATUS_MAX;                  /* MAXIMUM CONCURRENT COPIES */
	d[37] = g;                                      /* DATA SEGMENT GRANULARITY (log2) */
	d[43] = 2;                              /* IMPLEMENTED DESCRIPTOR LIST LENGTH */
	d[44] = XC_SEG_B2B;
	d[45] = XC_CSCD_ID_E4;
	scsi_reply(cmd, d, sizeof(d), alloc);
}

void scsi_xcopy_receive_copy_results(struct scsi_cmd *cmd)
{
	if ((cmd->cdb[1] & 0x1f) == 0x03)
		rcr_op_params(cmd);
	else
		rcr_copy_status(cmd);
}

/* ------------------------------------------------------------ VPD page 8Fh */

uint32_t scsi_xcopy_vpd_page(const struct scsi_cmd *cmd, uint8_t *d)
{
	const struct scsi_lu *lu = cmd->lu;
	uint8_t *p = &d[4];
	uint32_t bs = lu->block_size;
	uint8_t g = 0;

	while ((1u << g) < bs)
		g++;
	d[1] = 0x8f;

	/* Supported Commands: 83h/00h, 84h/00h+03h */
	put_be16(&p[0], 0x0001);
	put_be16(&p[2], 8);
	p[4] = 7;
	p[5] = 0x83; p[6] = 1; p[7] = 0x00;
	p[8] = 0x84; p[9] = 2; p[10] = 0x00; p[11] = 0x03;
	p += 12;

	/* Parameter Data */
	put_be16(&p[0], 0x0004);
	put_be16(&p[2], 0x1c);
	put_be16(&p[8], SCSI_XCOPY_MAX_CSCD);
	put_be16(&p[10], SCSI_XCOPY_MAX_SEGS);
	put_be32(&p[12], SCSI_XCOPY_MAX_DESC_LEN);
	p += 32;

	/* Supported Descriptors: block to block segments, identification CSCDs */
	put_be16(&p[0], 0x0008);
	put_be16(&p[2], 4);
	p[4] = 2;
	p[5] = XC_SEG_B2B;
	p[6] = XC_CSCD_ID_E4;
	p += 8;

	/* Supported CSCD Descriptor IDs: none beyond list indexes */
	put_be16(&p[0], 0x000c);
	put_be16(&p[2], 4);
	p += 8;

	/* General Copy Operations */
	put_be16(&p[0], 0x8001);
	put_be16(&p[2], 0x20);
	put_be32(&p[4], SCSI_XCOPY_STATUS_MAX);         /* TOTAL CONCURRENT COPIES */
	put_be32(&p[8], SCSI_XCOPY_STATUS_MAX);         /* MAXIMUM IDENTIFIED CONCURRENT COPIES */
	put_be32(&p[12], SCSI_XCOPY_MAX_SEG_BYTES);     /* MAXIMUM SEGMENT LENGTH */
	p[16] = g;                                      /* DATA SEGMENT GRANULARITY */
	p += 36;

	put_be16(&d[2], (uint16_t)(p - &d[4]));
	return (uint32_t)(p - d);
}
