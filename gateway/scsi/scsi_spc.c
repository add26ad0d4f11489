/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SPC-4 commands: INQUIRY and VPD pages, REPORT LUNS, REQUEST SENSE,
 * MODE SENSE/SELECT, REPORT SUPPORTED OPERATION CODES / TASK MANAGEMENT
 * FUNCTIONS, TEST UNIT READY.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsi/scsi_internal.h"
#include "common/log.h"

/* Copies s into a fixed-width, space-padded ASCII field. */
static void put_ascii(uint8_t *dst, size_t width, const char *s)
{
	size_t i, n = strnlen(s, width);

	for (i = 0; i < width; i++) {
		uint8_t c = i < n ? (uint8_t)s[i] : ' ';

		dst[i] = (c >= 0x20 && c <= 0x7e) ? c : ' ';
	}
}

void scsi_spc_test_unit_ready(struct scsi_cmd *cmd)
{
	if (bdev_offline(cmd->lu->bdev)) {     /* a backend target that stays unreachable */
		scsi_fail(cmd, SCSI_SK_NOT_READY, ASC_LU_BECOMING_READY);
		return;
	}
	scsi_good(cmd);
}

/* ---------------------------------------------------------------- INQUIRY */

static uint32_t inquiry_standard(const struct scsi_cmd *cmd, uint8_t *d)
{
	const struct scsi_lu *lu = cmd->lu;

	memset(d, 0, 96);
	if (!lu) {
		d[0] = 0x7f;    /* peripheral qualifier 3, device type 1fh */
	} else {
		d[0] = 0x00;    /* qualifier 0, direct access block device */
	}
	d[2] = 0x06;            /* SPC-4 */
	d[3] = 0x12;            /* HISUP, response data format 2 */
	d[4] = 96 - 5;
	d[5] = lu ? (uint8_t)((lu->tpgs & 3) << 4) : 0;
	if (lu)
		d[5] |= 0x08;   /* 3PC: EXTENDED COPY */
	if (lu && scsi_alua_multiport())
		d[6] = 0x10;    /* MULTIP: the LU has several target ports (the cluster's port map) */
	d[7] = 0x02;            /* CMDQUE */
	put_ascii(&d[8], 8, lu ? lu->params.vendor : "ISERGW");
	put_ascii(&d[16], 16, lu ? lu->params.product : "");
	put_ascii(&d[32], 4, lu ? lu->params.revision : "");
	put_be16(&d[58], 0x00a0);       /* SAM-5 */
	put_be16(&d[60], 0x0960);       /* iSCSI */
	put_be16(&d[62], 0x0460);       /* SPC-4 */
	put_be16(&d[64], 0x04c0);       /* SBC-3 */
	return 96;
}

static uint32_t vpd_serial(const struct scsi_cmd *cmd, uint8_t *d)
{
	const struct scsi_lu *lu = cmd->lu;
	size_t n = strnlen(lu->params.serial, sizeof(lu->params.serial));

	d[1] = 0x80;
	put_be16(&d[2], (uint16_t)n);
	memcpy(&d[4], lu->params.serial, n);
	return (uint32_t)(4 + n);
}

/* SCSI name string designators: null terminated, padded to a multiple of 4. */
static uint32_t put_name_designator(uint8_t *p, uint8_t assoc, const char *name)
{
	size_t n = strnlen(name, 252);
	size_t len = (n + 1 + 3) & ~(size_t)3;

	p[0] = 0x53;                            /* protocol iSCSI, code set UTF-8 */
	p[1] = (uint8_t)(0x80 | assoc << 4 | 0x8); /* PIV, association, SCSI name string */
	p[3] = (uint8_t)len;
	memset(&p[4], 0, len);
	memcpy(&p[4], name, n);
	return (uint32_t)(4 + len);
}

static uint32_t vpd_devid(const struct scsi_cmd *cmd, uint8_t *d)
{
	const struct scsi_lu *lu = cmd->lu;
	uint8_t *p = &d[4];
	size_t n;

	d[1] = 0x83;
	/* NAA IEEE Registered Extended (type 6), logical unit */
	p[0] = 0x01;
	p[1] = 0x03;
	p[3] = 16;
	memcpy(&p[4], lu->params.naa, 16);
	p += 20;

	/* T10 vendor identification: vendor + serial, logical unit */
	n = strnlen(lu->params.serial, sizeof(lu->params.serial));
	if (n > 64)
		n = 64;
	p[0] = 0x02;
	p[1] = 0x01;
	p[3] = (uint8_t)(8 + n);
	put_ascii(&p[4], 8, lu->params.vendor);
	memcpy(&p[12], lu->params.serial, n);
	p += 4 + 8 + n;

	if (cmd->itn && cmd->itn->port) {
		const struct scsi_port *port = cmd->itn->port;

		/* target port name */
		p += put_name_designator(p, 1, port->name);
		/* relative target port identifier */
		p[0] = 0x51;
		p[1] = 0x94;
		p[3] = 4;
		put_be16(&p[6], port->rel_port_id);
		p += 8;
		/* target port group */
		p[0] = 0x51;
		p[1] = 0x95;
		p[3] = 4;
		put_be16(&p[6], port->tpg_id);
		p += 8;
	}
	put_be16(&d[2], (uint16_t)(p - &d[4]));
	return (uint32_t)(p - d);
}

static uint32_t vpd_block_limits(const struct scsi_cmd *cmd, uint8_t *d)
{
	const struct scsi_lu *lu = cmd->lu;
	uint32_t bs = lu->block_size;

	d[1] = 0xb0;
	put_be16(&d[2], 0x3c);
	d[4] = 0x01;                            /* WSNZ */
	d[5] = SCSI_MAX_CAW_BLOCKS;
	put_be16(&d[6], bs < 4096 ? (uint16_t)(4096 / bs) : 1);
	put_be32(&d[8], scsi_lu_max_xfer(lu) / bs);
	put_be32(&d[12], scsi_lu_opt_xfer(lu) / bs);
	if (scsi_lu_thin(lu)) {
		put_be32(&d[20], SCSI_MAX_UNMAP_LBAS);
		put_be32(&d[24], SCSI_MAX_UNMAP_DESC);
		put_be32(&d[28], bs < 4096 ? 4096 / bs : 1);
	}
	put_be64(&d[36], SCSI_MAX_WS_BLOCKS);
	/* WRITE ATOMIC(16): any alignment, any multiple of one block, no boundaries */
	put_be32(&d[44], SCSI_MAX_ATOMIC_BYTES / bs);   /* MAXIMUM ATOMIC TRANSFER LENGTH */
	put_be32(&d[48], 1);                            /* ATOMIC ALIGNMENT */
	put_be32(&d[52], 1);                            /* ATOMIC TRANSFER LENGTH GRANULARITY */
	return 64;
}

static uint32_t vpd_bdc(const struct scsi_cmd *cmd, uint8_t *d)
{
	const struct scsi_lu *lu = cmd->lu;

	d[1] = 0xb1;
	put_be16(&d[2], 0x3c);
	put_be16(&d[4], lu->bdev->info.rotational ? 0 : 1);
	return 64;
}

static uint32_t vpd_lbp(const struct scsi_cmd *cmd, uint8_t *d)
{
	const struct scsi_lu *lu = cmd->lu;

	d[1] = 0xb2;
	put_be16(&d[2], 4);
	if (scsi_lu_thin(lu)) {
		d[5] = 0x80 | 0x40 | 0x20 | 0x04; /* LBPU LBPWS LBPWS10 LBPRZ */
		d[6] = 0x02;                       /* thin provisioned */
	}
	return 8;
}

static uint32_t vpd_supported(const struct scsi_cmd *cmd, uint8_t *d);

/* The VPD pages INQUIRY returns, in page code order; each fills d and returns its length. */
static const struct vpd_page {
	uint8_t code;
	uint32_t (*fill)(const struct scsi_cmd *cmd, uint8_t *d);
} vpd_pages[] = {
	{ 0x00, vpd_supported },
	{ 0x80, vpd_serial },
	{ 0x83, vpd_devid },
	{ 0x8f, scsi_xcopy_vpd_page },
	{ 0xb0, vpd_block_limits },
	{ 0xb1, vpd_bdc },
	{ 0xb2, vpd_lbp },
};
#define NVPD_PAGES (sizeof(vpd_pages) / sizeof(vpd_pages[0]))

static uint32_t vpd_supported(const struct scsi_cmd *cmd, uint8_t *d)
{
	size_t i;

	(void)cmd;
	d[1] = 0x00;
	put_be16(&d[2], NVPD_PAGES);
	for (i = 0; i < NVPD_PAGES; i++)
		d[4 + i] = vpd_pages[i].code;
	return 4 + NVPD_PAGES;
}

void scsi_spc_inquiry(struct scsi_cmd *cmd)
{
	uint8_t d[512];
	uint16_t alloc = get_be16(&cmd->cdb[3]);
	uint32_t len;

	memset(d, 0, sizeof(d));
	if (cmd->cdb[1] & 0x02) {               /* obsolete CMDDT */
		scsi_fail_cdb(cmd, 1, 1);
		return;
	}
	if (!(cmd->cdb[1] & 0x01)) {
		if (cmd->cdb[2] != 0) {
			scsi_fail_cdb(cmd, 2, -1);
			return;
		}
		len = inquiry_standard(cmd, d);
		scsi_reply(cmd, d, len, alloc);
		return;
	}
	if (!cmd->lu) {
		/* no LU behind this LUN: only the qualifier byte is meaningful */
		d[0] = 0x7f;
		d[1] = cmd->cdb[2];
		if (cmd->cdb[2] != 0x00) {
			scsi_fail_cdb(cmd, 2, -1);
			return;
		}
		len = vpd_supported(cmd, d);
		d[0] = 0x7f;
		scsi_reply(cmd, d, len, alloc);
		return;
	}
	for (size_t i = 0; i < NVPD_PAGES; i++) {
		if (vpd_pages[i].code == cmd->cdb[2]) {
			len = vpd_pages[i].fill(cmd, d);
			scsi_reply(cmd, d, len, alloc);
			return;
		}
	}
	scsi_fail_cdb(cmd, 2, -1);
}

/* ------------------------------------------------------------ REPORT LUNS */

void scsi_spc_report_luns(struct scsi_cmd *cmd)
{
	const struct scsi_itn *itn = cmd->itn;
	uint8_t sel = cmd->cdb[2];
	uint32_t alloc = get_be32(&cmd->cdb[6]);
	uint32_t i, n = 0, counted, len;
	uint8_t *d;

	if (sel > 0x02) {
		scsi_fail_cdb(cmd, 2, -1);
		return;
	}
	if (alloc < 16) {
		scsi_fail_cdb(cmd, 6, -1);
		return;
	}
	if (sel != 0x01 && itn && itn->luns)
		for (i = 0; i < itn->nluns && i < 16384; i++)
			if (scsi_itn_lu(itn, i))
				n++;
	len = 8 + 8 * n;
	d = calloc(1, len);
	if (!d) {
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	/* a reload may add or remove LUNs meanwhile: at most the n counted */
	counted = n;
	n = 0;
	if (sel != 0x01 && itn && itn->luns) {
		for (i = 0; i < itn->nluns && i < 16384 && n < counted; i++) {
			uint8_t *e;

			if (!scsi_itn_lu(itn, i))
				continue;
			e = &d[8 + 8 * n++];
			if (i < 256) {
				e[1] = (uint8_t)i;              /* peripheral device addressing */
			} else {
				e[0] = (uint8_t)(0x40 | i >> 8); /* flat space addressing */
				e[1] = (uint8_t)i;
			}
		}
	}
	put_be32(&d[0], 8 * n);
	len = 8 + 8 * n;
	scsi_reply(cmd, d, len, alloc);
	free(d);
}

/* ---------------------------------------------------------- REQUEST SENSE */

void scsi_spc_request_sense(struct scsi_cmd *cmd)
{
	uint8_t d[18];
	uint8_t alloc = cmd->cdb[4];
	uint16_t asc = ASC_NO_ADDITIONAL;
	uint8_t key = SCSI_SK_NO_SENSE;

	if (cmd->cdb[1] & 0x01) {               /* DESC: descriptor format unsupported */
		scsi_fail_cdb(cmd, 1, 0);
		return;
	}
	if (!cmd->lu) {
		key = SCSI_SK_ILLEGAL_REQUEST;
		asc = ASC_LU_NOT_SUPPORTED;
	} else if (atomic_load(&cmd->lu->ua_pending)) {
		const char *iport;
		uint16_t rel, ua;

		scsi_nexus_id(cmd->itn, &iport, &rel);
		pthread_mutex_lock(&cmd->lu->lock);
		if (scsi_ua_pop(cmd->lu, iport, rel, &ua)) {
			key = SCSI_SK_UNIT_ATTENTION;
			asc = ua;
		}
		pthread_mutex_unlock(&cmd->lu->lock);
	}
	memset(d, 0, sizeof(d));
	d[0] = 0x70;
	d[2] = key;
	d[7] = 10;
	d[12] = (uint8_t)(asc >> 8);
	d[13] = (uint8_t)asc;
	scsi_reply(cmd, d, sizeof(d), alloc);
}

/* ------------------------------------------------------------- MODE pages */

enum mode_pc { PC_CURRENT = 0, PC_CHANGEABLE = 1, PC_DEFAULT = 2, PC_SAVED = 3 };

#define MP_CACHING  0x08
#define MP_CONTROL  0x0a
#define MP_IEC      0x1c
#define MP_ALL      0x3f

static const uint8_t mode_pages[] = { MP_CACHING, MP_CONTROL, MP_IEC };

/* Builds one page for the given page control; returns its length or 0. */
static uint32_t mode_page(const struct scsi_lu *lu, uint8_t page, int pc, uint8_t *p)
{
	switch (page) {
	case MP_CACHING:
		memset(p, 0, 20);
		p[0] = MP_CACHING;
		p[1] = 0x12;
		if (pc == PC_CHANGEABLE)
			p[2] = 0x04;                    /* WCE */
		else if (pc == PC_DEFAULT)
			p[2] = lu->params.write_cache ? 0x04 : 0;
		else
			p[2] = lu->wce ? 0x04 : 0;
		return 20;
	case MP_CONTROL:
		memset(p, 0, 12);
		p[0] = MP_CONTROL;
		p[1] = 0x0a;
		if (pc == PC_CHANGEABLE) {
			p[4] = 0x08;                    /* SWP */
			return 12;
		}
		/* TST 001b: a task set per I_T nexus, as the core orders tasks (core/task.c) */
		p[2] = 0x20;
		p[3] = 0x10;                            /* QUEUE ALGORITHM MODIFIER 1 */
		if (pc != PC_DEFAULT && lu->swp)
			p[4] = 0x08;
		put_be16(&p[8], 0xffff);                /* busy timeout: unlimited */
		return 12;
	case MP_IEC:
		memset(p, 0, 12);
		p[0] = MP_IEC;
		p[1] = 0x0a;
		if (pc != PC_CHANGEABLE)
			p[2] = 0x08;                    /* DEXCPT: no exception reporting */
		return 12;
	default:
		return 0;
	}
}

void scsi_spc_mode_sense(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	bool ten = cmd->cdb[0] == 0x5a;
	bool dbd = cmd->cdb[1] & 0x08;
	bool llbaa = ten && (cmd->cdb[1] & 0x10);
	int pc = cmd->cdb[2] >> 6;
	uint8_t page = cmd->cdb[2] & 0x3f;
	uint8_t subpage = cmd->cdb[3];
	uint32_t alloc = ten ? get_be16(&cmd->cdb[7]) : cmd->cdb[4];
	uint8_t d[256];
	uint32_t hdr = ten ? 8 : 4, len, bdl = 0;
	size_t i;

	memset(d, 0, sizeof(d));
	if (pc == PC_SAVED) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_SAVING_NOT_SUPPORTED);
		return;
	}
	if (page == MP_ALL) {
		if (subpage != 0x00 && subpage != 0xff) {
			scsi_fail_cdb(cmd, 3, -1);
			return;
		}
	} else if (subpage != 0x00) {
		scsi_fail_cdb(cmd, 3, -1);
		return;
	}

	pthread_mutex_lock(&lu->lock);
	len = hdr;
	if (!dbd) {
		if (llbaa) {
			bdl = 16;
			put_be64(&d[len], lu->nblocks);
			put_be32(&d[len + 12], lu->block_size);
		} else {
			bdl = 8;
			put_be32(&d[len], lu->nblocks > 0xffffffffull ? 0xffffffffu
								   : (uint32_t)lu->nblocks);
			put_be24(&d[len + 5], lu->block_size);
		}
		len += bdl;
	}
	if (page == MP_ALL) {
		for (i = 0; i < sizeof(mode_pages); i++)
			len += mode_page(lu, mode_pages[i], pc, &d[len]);
	} else {
		uint32_t n = mode_page(lu, page, pc, &d[len]);

		if (n == 0) {
			pthread_mutex_unlock(&lu->lock);
			scsi_fail_cdb(cmd, 2, 5);
			return;
		}
		len += n;
	}
	/* device-specific parameter: WP, DPOFUA */
	d[ten ? 3 : 2] = (uint8_t)((scsi_lu_write_protected(lu) ? 0x80 : 0) | 0x10);
	pthread_mutex_unlock(&lu->lock);

	if (ten) {
		put_be16(&d[0], (uint16_t)(len - 2));
		if (llbaa && bdl)
			d[4] = 0x01;                    /* LONGLBA */
		put_be16(&d[6], (uint16_t)bdl);
	} else {
		d[0] = (uint8_t)(len - 1);
		d[3] = (uint8_t)bdl;
	}
	scsi_reply(cmd, d, len, alloc);
}

/*
 * MODE SELECT: parse everything into a staged copy, validate every page
 * against the changeable mask, then commit at once.
 */
/* The cluster's answer to a MODE SELECT's change (its reactor). */
static void mode_select_finish(struct scsi_cmd *cmd, int status, void *ctx)
{
	(void)ctx;
	if (!cmd)
		return;
	if (status == 0)
		scsi_good(cmd);
	else if (status == -ESTALE && scsi_lu_cluster_rerun_ok(cmd))
		scsi_spc_mode_select(cmd);
	else
		scsi_lu_cluster_fail(cmd, status);
}

void scsi_spc_mode_select(struct scsi_cmd *cmd)
{
	struct scsi_lu *lu = cmd->lu;
	struct scsi_lu_proposal *prop = NULL;
	bool ten = cmd->cdb[0] == 0x55;
	uint32_t plen = ten ? get_be16(&cmd->cdb[7]) : cmd->cdb[4];
	uint32_t hdr = ten ? 8 : 4, off, bdl;
	const uint8_t *d = cmd->buf;
	bool new_wce, new_swp, changed, have_wce = false, have_swp = false;
	const char *iport;
	uint16_t rel;

	if (cmd->cdb[1] & 0x01) {               /* SP: saving not supported */
		scsi_fail_cdb(cmd, 1, 0);
		return;
	}
	if (plen == 0) {
		scsi_good(cmd);
		return;
	}
	if (plen > cmd->buf_len || !d || plen < hdr) {
		scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
		return;
	}
	bdl = ten ? get_be16(&d[6]) : d[3];
	if (bdl) {
		bool longlba = ten && (d[4] & 0x01);

		if (bdl != (longlba ? 16u : 8u)) {
			scsi_fail_param(cmd, ten ? 6 : 3, -1);
			return;
		}
		if (hdr + bdl > plen) {
			scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
			return;
		}
		/* the block length cannot be changed */
		if ((longlba ? get_be32(&d[hdr + 12]) : get_be24(&d[hdr + 5])) != lu->block_size) {
			scsi_fail_param(cmd, (uint16_t)(hdr + (longlba ? 12 : 5)), -1);
			return;
		}
	}

	pthread_mutex_lock(&lu->lock);
	new_wce = lu->wce;
	new_swp = lu->swp;
	for (off = hdr + bdl; off < plen;) {
		uint8_t cur[32], mask[32];
		uint8_t page, plen_page;
		uint32_t n, i;

		if (off + 2 > plen)
			goto err_len;
		page = d[off] & 0x3f;
		if (d[off] & 0x40) {            /* SPF: no subpages supported */
			pthread_mutex_unlock(&lu->lock);
			scsi_fail_param(cmd, (uint16_t)off, 6);
			return;
		}
		plen_page = d[off + 1];
		n = mode_page(lu, page, PC_CURRENT, cur);
		if (n == 0) {
			pthread_mutex_unlock(&lu->lock);
			scsi_fail_param(cmd, (uint16_t)off, 5);
			return;
		}
		if (plen_page != n - 2) {
			pthread_mutex_unlock(&lu->lock);
			scsi_fail_param(cmd, (uint16_t)(off + 1), -1);
			return;
		}
		if (off + n > plen)
			goto err_len;
		mode_page(lu, page, PC_CHANGEABLE, mask);
		for (i = 2; i < n; i++) {
			if ((d[off + i] ^ cur[i]) & ~mask[i]) {
				pthread_mutex_unlock(&lu->lock);
				scsi_fail_param(cmd, (uint16_t)(off + i), -1);
				return;
			}
		}
		if (page == MP_CACHING) {
			new_wce = d[off + 2] & 0x04;
			have_wce = true;
		} else if (page == MP_CONTROL) {
			new_swp = d[off + 4] & 0x08;
			have_swp = true;
		}
		off += n;
	}
	/* shared with other nodes: commit against the latest values */
	if (lu->sh && scsi_lu_shared_begin(lu) < 0) {
		pthread_mutex_unlock(&lu->lock);
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	if (!have_wce)
		new_wce = lu->wce;
	if (!have_swp)
		new_swp = lu->swp;
	changed = new_wce != lu->wce || new_swp != lu->swp;
	lu->wce = new_wce;
	lu->swp = new_swp;
	if (changed) {
		scsi_nexus_id(cmd->itn, &iport, &rel);
		if (lu->sh)
			scsi_lu_shared_ua(lu, SHS_EV_UA_ALL, SHS_EVF_EXCEPT, ASC_MODE_PARAMS_CHANGED,
					  iport, rel);
		else
			scsi_ua_add_all(lu, scsi_nexus_lookup(lu, iport, rel, false),
					ASC_MODE_PARAMS_CHANGED);
	}
	if (lu->sh) {
		scsi_lu_shared_end(lu, changed);
		prop = lu_shared_take(lu);
	}
	pthread_mutex_unlock(&lu->lock);
	if (changed)
		GW_INFO(SCSI_LOG, "lun %llu: mode select: WCE=%d SWP=%d%s",
			(unsigned long long)lu->params.lun, new_wce, new_swp,
			prop ? " (proposed to the cluster)" : "");
	if (prop) {
		int rc = scsi_lu_cluster_submit(lu, prop, cmd, mode_select_finish, NULL);

		if (rc)
			scsi_lu_cluster_fail(cmd, rc);
		return;
	}
	scsi_good(cmd);
	return;

err_len:
	pthread_mutex_unlock(&lu->lock);
	scsi_fail(cmd, SCSI_SK_ILLEGAL_REQUEST, ASC_PARAM_LIST_LENGTH);
}

/* ------------------------------------------ REPORT SUPPORTED OPERATION CODES */

static uint32_t put_timeout_desc(uint8_t *p, const struct scsi_opdef *def)
{
	memset(p, 0, 12);
	put_be16(&p[0], 0x0a);
	put_be32(&p[4], def->timeout_s);        /* nominal */
	put_be32(&p[8], def->timeout_s * 2);    /* recommended */
	return 12;
}

void scsi_spc_rsoc(struct scsi_cmd *cmd)
{
	bool rctd = cmd->cdb[2] & 0x80;
	uint8_t opt = cmd->cdb[2] & 0x07;
	uint8_t rop = cmd->cdb[3];
	uint16_t rsa = get_be16(&cmd->cdb[4]);
	uint32_t alloc = get_be32(&cmd->cdb[6]);
	const struct scsi_opdef *tab, *def;
	size_t n, i;
	uint8_t *d;
	uint32_t len = 0;
	bool known;

	tab = scsi_op_table(&n);
	d = calloc(1, 4 + n * 20 + 64);
	if (!d) {
		scsi_fail(cmd, SCSI_SK_HARDWARE_ERROR, ASC_INTERNAL_TARGET_FAILURE);
		return;
	}
	switch (opt) {
	case 0:
		len = 4;
		for (i = 0; i < n; i++) {
			uint8_t *e = &d[len];

			def = &tab[i];
			if (def->avail && !def->avail(cmd->lu))
				continue;
			e[0] = def->op;
			if (def->flags & OPF_SA) {
				put_be16(&e[2], def->sa);
				e[5] |= 0x01;           /* SERVACTV */
			}
			if (rctd)
				e[5] |= 0x02;           /* CTDP */
			put_be16(&e[6], def->cdb_len);
			len += 8;
			if (rctd)
				len += put_timeout_desc(&d[len], def);
		}
		put_be32(&d[0], len - 4);
		break;
	case 1:
	case 2:
		def = scsi_find_op(rop, (uint8_t)rsa, &known);
		if (known) {
			/* is rop an opcode with service actions? */
			bool has_sa = def ? (def->flags & OPF_SA) : true;

			if (opt == 1 && has_sa) {
				free(d);
				scsi_fail_cdb(cmd, 2, 2);
				return;
			}
			if (opt == 2 && !has_sa) {
				free(d);
				scsi_fail_cdb(cmd, 2, 2);
				return;
			}
		}
		if (opt == 2 && rsa > 0x1f)
			def = NULL;
		if (def && def->avail && !def->avail(cmd->lu))
			def = NULL;
		if (!def) {
			d[1] = 0x01;                    /* not supported */
			len = 4;
			break;
		}
		d[1] = 0x03 | (rctd ? 0x80 : 0);        /* supported per standard */
		put_be16(&d[2], def->cdb_len);
		memcpy(&d[4], def->usage, def->cdb_len);
		len = 4 + def->cdb_len;
		if (rctd)
			len += put_timeout_desc(&d[len], def);
		break;
	default:
		free(d);
		scsi_fail_cdb(cmd, 2, 2);
		return;
	}
	scsi_reply(cmd, d, len, alloc);
	free(d);
}

void scsi_spc_rstmf(struct scsi_cmd *cmd)
{
	uint8_t d[16];
	bool repd = cmd->cdb[2] & 0x80;
	uint32_t alloc = get_be32(&cmd->cdb[6]);

	memset(d, 0, sizeof(d));
	/* ABORT TASK, ABORT TASK SET, CLEAR TASK SET, LOGICAL UNIT RESET, TARGET RESET */
	d[0] = 0x80 | 0x40 | 0x10 | 0x08 | 0x02;
	if (repd) {
		d[3] = 0x0c;
		scsi_reply(cmd, d, 16, alloc);
	} else {
		scsi_reply(cmd, d, 4, alloc);
	}
}
