/* SPDX-License-Identifier: Apache-2.0 */
/* A gateway without threads on memory backstores (see fake_gw.h). */
#include "fake_gw.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "config/config.h"
#include "common/log.h"

/* LUN 0: 512-byte blocks; LUN 1: 4 KiB blocks, no write cache, a transfer limit. */
static const struct {
	uint64_t size;
	uint32_t block_size;
	bool write_cache;
	uint32_t max_xfer;
} lun_geom[FAKE_GW_LUNS] = {
	{ 128u * 1024u, 512, true, 0 },
	{ 256u * 1024u, 4096, false, 64u * 1024u },
};

struct mem_bdev {
	struct bdev b;
	uint8_t *data;
	bool dirty;
	struct bdev_io *qhead, *qtail;  /* submitted, not completed (linked by io->priv) */
	struct reactor_deferred work;
	struct reactor *r;
};

static struct mem_bdev *mems[FAKE_GW_LUNS];
static bool hold_io, release_io;

static void mem_work(void *arg)
{
	struct mem_bdev *m = arg;
	struct bdev_io *io, *next;

	if (hold_io && !release_io)
		return;
	io = m->qhead;
	m->qhead = m->qtail = NULL;
	for (; io; io = next) {
		uint64_t done = 0;

		next = io->priv;
		io->priv = NULL;
		io->result = 0;
		switch (io->op) {
		case BDEV_OP_READ:
		case BDEV_OP_WRITE:
			for (int i = 0; i < io->iovcnt; i++) {
				size_t n = io->iov[i].iov_len;

				if (done + n > io->len) {
					io->result = -EIO;
					break;
				}
				if (io->op == BDEV_OP_READ)
					memcpy(io->iov[i].iov_base, m->data + io->offset + done, n);
				else
					memcpy(m->data + io->offset + done, io->iov[i].iov_base, n);
				done += n;
			}
			if (done != io->len)
				io->result = -EIO;
			if (io->op == BDEV_OP_WRITE)
				m->dirty = true;
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
}

static int mem_submit(struct bdev *b, struct bdev_io *io)
{
	struct mem_bdev *m = (struct mem_bdev *)(void *)b;
	struct reactor *r = reactor_self();

	if (io->offset > b->info.size_bytes || io->len > b->info.size_bytes - io->offset)
		return -EINVAL;
	if (!r) {
		fprintf(stderr, "fake_gw: I/O submitted outside the reactor\n");
		abort();
	}
	if (io->flags & BDEV_IO_COMPARE_AND_WRITE)
		return -EINVAL; /* not native_caw: the SCSI layer emulates it */
	m->r = r;
	io->priv = NULL;
	if (m->qtail)
		m->qtail->priv = io;
	else
		m->qhead = io;
	m->qtail = io;
	if (!hold_io)
		reactor_defer(r, &m->work);
	return 0;
}

static void mem_close(struct bdev *b)
{
	(void)b;
}

static const struct bdev_ops mem_ops = { .name = "mem", .submit = mem_submit, .close = mem_close };

static struct reactor_deferred release_deferred;

void fake_gw_hold_io(struct fake_gw *g, bool hold)
{
	if (hold_io && !hold)
		reactor_defer(g->r, &release_deferred); /* what was held goes now */
	hold_io = hold;
}

static void release_work(void *arg)
{
	(void)arg;
	release_io = true;
	for (int i = 0; i < FAKE_GW_LUNS; i++)
		if (mems[i])
			mem_work(mems[i]);
	release_io = false;
}

void fake_gw_run_io(struct fake_gw *g)
{
	reactor_defer(g->r, &release_deferred);
}

void fake_gw_poll(struct fake_gw *g)
{
	int rc;

	/* round after round (no timers: time does not pass here) until nothing is ready */
	while ((rc = reactor_poll(g->r)) > 0)
		;
	if (rc < 0)
		abort();
}

static const char config_fmt[] =
	"{ \"state_dir\": \"/nonexistent/isergw-fuzz\", \"nop_interval_s\": 0,"
	"  \"portals\": [ { \"url\": \"%s://127.0.0.1:3260\", \"rel_port_id\": 1 } ],"
	"  \"targets\": [ { \"iqn\": \"" FAKE_GW_TARGET "\", \"luns\": ["
	"    { \"lun\": 0, \"path\": \"/nonexistent/lun0\", \"size\": \"128K\" },"
	"    { \"lun\": 1, \"path\": \"/nonexistent/lun1\", \"size\": \"256K\" } ] } ] }";

static void alua_setup(struct fake_gw *g)
{
	const struct gw_portal_cfg *pc = g->portal->cfg;
	struct scsi_alua_port port = { pc->rel_port_id, pc->tpg_id, true };

	scsi_alua_reset();
	(void)scsi_alua_set_ports(&port, 1);
	(void)scsi_alua_dg_configure(SCSI_ALUA_DG_DEFAULT, 0, SCSI_ALUA_ACTIVE_NON_OPTIMIZED);
	scsi_alua_set_policy(SCSI_ALUA_POLICY_LOCAL, g->gw->cfg->alua_request_timeout_ms);
	(void)scsi_alua_register_port(&g->target->ports[0]);
}

static void luns_close(struct fake_gw *g)
{
	for (uint32_t i = 0; i < FAKE_GW_LUNS; i++) {
		if (g->target->luns[i])
			scsi_lu_destroy(g->target->luns[i]);
		g->target->luns[i] = NULL;
	}
}

int fake_gw_reset(struct fake_gw *g)
{
	int rc;

	luns_close(g);
	alua_setup(g);
	for (uint32_t i = 0; i < FAKE_GW_LUNS; i++) {
		struct mem_bdev *m = mems[i];
		struct scsi_lu_params p;

		if (m->qhead) {
			fprintf(stderr, "fake_gw: I/O left on LUN %u after a reset\n", i);
			abort();
		}
		reactor_deferred_cancel(g->r, &m->work);
		if (m->dirty) {
			memset(m->data, 0, m->b.info.size_bytes);
			m->dirty = false;
		}
		memset(&p, 0, sizeof(p));
		p.lun = i;
		snprintf(p.vendor, sizeof(p.vendor), "ISERGW");
		snprintf(p.product, sizeof(p.product), "fuzz LUN %u", i);
		snprintf(p.revision, sizeof(p.revision), "0001");
		snprintf(p.serial, sizeof(p.serial), "FUZZ-%u", i);
		p.naa[0] = 0x60;
		for (unsigned int k = 1; k < 16; k++)
			p.naa[k] = (uint8_t)(0x11 * k + i);
		p.write_cache = lun_geom[i].write_cache;
		p.thin = true;
		p.max_xfer_bytes = lun_geom[i].max_xfer;
		rc = scsi_lu_create(&p, &m->b, &g->target->luns[i]);
		if (rc)
			return rc;
	}
	hold_io = false;
	release_io = false;
	/* the same TSIH and nexus id for every input */
	g->gw->next_tsih = 0;
	g->gw->next_itn_id = 0;
	return 0;
}

int fake_gw_create(const struct gw_dm_ops *dm, enum gw_transport transport, struct fake_gw **out)
{
	struct fake_gw *g = calloc(1, sizeof(*g));
	struct gw_config *cfg = NULL;
	char json[sizeof(config_fmt) + 16], err[256];
	struct gw_target *t;
	struct gw *gw;
	int rc;

	if (!g)
		return -ENOMEM;
	snprintf(json, sizeof(json), config_fmt, transport == GW_TRANSPORT_ISER ? "iser" : "tcp");
	rc = gw_config_load_string(json, &cfg, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "fake_gw: configuration: %s\n", err);
		free(g);
		return rc;
	}
	gw = calloc(1, sizeof(*gw));
	if (!gw)
		abort();
	gw->cfg = cfg;
	gw->ifaddr_fd = -1;
	list_init(&gw->sessions);
	pthread_mutex_init(&gw->sess_lock, NULL);
	gw_login_slots_init(&gw->login_slots);
	gw->nreactors = 1;
	gw->reactors = calloc(1, sizeof(*gw->reactors));
	gw->portals = calloc(1, sizeof(*gw->portals));
	gw->targets = calloc(1, sizeof(*gw->targets));
	if (!gw->reactors || !gw->portals || !gw->targets)
		abort();
	rc = reactor_create(0, &gw->reactors[0]);
	if (rc)
		abort();
	gw->portals[0] = calloc(1, sizeof(*gw->portals[0]));
	if (!gw->portals[0])
		abort();
	gw->portals[0]->gw = gw;
	gw->portals[0]->cfg = &cfg->portals[0];
	gw->portals[0]->dm = dm;
	atomic_init(&gw->portals[0]->state, GW_PORTAL_LISTENING);
	gw->nportals = 1;

	t = calloc(1, sizeof(*t));
	if (!t)
		abort();
	t->gw = gw;
	t->cfg = &cfg->targets[0];
	/*
	 * the core walks luns[0..nluns) at every login and logout: a short map
	 * (LUNs past it are holes, as past the last configured LUN) keeps an
	 * execution fast
	 */
	t->nluns = FAKE_GW_LUNS + 2;
	t->luns = calloc(GW_MAX_LUNS, sizeof(*t->luns));
	t->bdevs = calloc(GW_MAX_LUNS, sizeof(*t->bdevs));
	t->ports = calloc(1, sizeof(*t->ports));
	if (!t->luns || !t->bdevs || !t->ports)
		abort();
	t->ports[0].rel_port_id = cfg->portals[0].rel_port_id;
	t->ports[0].tpg_id = cfg->portals[0].tpg_id;
	snprintf(t->ports[0].name, sizeof(t->ports[0].name), "%s,t,0x%04x", t->cfg->iqn,
		 cfg->portals[0].tpgt);
	gw->targets[0] = t;
	gw->ntargets = 1;
	atomic_store(&gw->running, true);

	g->gw = gw;
	g->r = gw->reactors[0];
	g->portal = gw->portals[0];
	g->target = t;
	reactor_deferred_init(&release_deferred, release_work, NULL);
	for (uint32_t i = 0; i < FAKE_GW_LUNS; i++) {
		struct mem_bdev *m = calloc(1, sizeof(*m));

		if (!m)
			abort();
		m->b.ops = &mem_ops;
		m->b.info.size_bytes = lun_geom[i].size;
		m->b.info.block_size = lun_geom[i].block_size;
		m->b.info.unmap_supported = true;
		snprintf(m->b.name, sizeof(m->b.name), "mem%u", i);
		m->data = calloc(1, lun_geom[i].size);
		if (!m->data)
			abort();
		reactor_deferred_init(&m->work, mem_work, m);
		mems[i] = m;
	}
	iscsi_task_register_preempt_abort(gw);
	rc = fake_gw_reset(g);
	if (rc) {
		fprintf(stderr, "fake_gw: cannot create the LUs: %s\n", strerror(-rc));
		abort();
	}
	*out = g;
	return 0;
}

void fake_gw_destroy(struct fake_gw *g)
{
	if (!g)
		return;
	luns_close(g);
	for (uint32_t i = 0; i < FAKE_GW_LUNS; i++) {
		free(mems[i]->data);
		free(mems[i]);
		mems[i] = NULL;
	}
	scsi_alua_reset();
	gw_destroy(g->gw);
	free(g);
}

void fake_gw_put_key(char *buf, size_t *len, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n + 1 >= cap - *len)
		abort();
	*len += (size_t)n + 1; /* keep the NUL: it separates keys */
}

void fake_gw_login_req(struct iscsi_login_req *req, const uint8_t isid[6], uint32_t itt,
		       uint32_t cmd_sn, uint32_t klen)
{
	memset(req, 0, sizeof(*req));
	req->opcode = ISCSI_OP_LOGIN_REQ | ISCSI_OP_IMMEDIATE;
	req->flags = ISCSI_LOGIN_TRANSIT | (ISCSI_STAGE_OPERATIONAL << ISCSI_LOGIN_CSG_SHIFT) |
		     ISCSI_STAGE_FULL_FEATURE;
	memcpy(req->isid, isid, 6);
	req->itt = htobe32(itt);
	req->cid = htobe16(1);
	req->cmd_sn = htobe32(cmd_sn);
	iscsi_bhs_set_dsl((struct iscsi_bhs *)req, klen);
}

bool fake_gw_has_cmd_sn(uint8_t op)
{
	switch (op) {
	case ISCSI_OP_NOP_OUT:
	case ISCSI_OP_SCSI_CMD:
	case ISCSI_OP_TASK_MGMT_REQ:
	case ISCSI_OP_LOGIN_REQ:
	case ISCSI_OP_TEXT_REQ:
	case ISCSI_OP_LOGOUT_REQ:
		return true;
	default:
		return false;
	}
}
