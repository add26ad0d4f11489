/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The datamover registry: one ops table per transport, registered by the
 * datamovers themselves (dm/tcp.c, dm/iser.c), with the -EOPNOTSUPP defaults
 * of unset entries.
 */
#include <errno.h>
#include <stddef.h>

#include "core/iscsi.h"
#include "core/datamover.h"
#include "common/bufpool.h"

static int stub_listen(struct gw_portal *p) { (void)p; return -EOPNOTSUPP; }
static void stub_unlisten(struct gw_portal *p) { (void)p; }
static int stub_send(struct iscsi_conn *c, struct iscsi_tx_pdu *pdu) { (void)c; (void)pdu; return -EOPNOTSUPP; }
static int stub_task(struct iscsi_conn *c, struct iscsi_task *t) { (void)c; (void)t; return -EOPNOTSUPP; }
static void stub_release(struct iscsi_conn *c, struct iscsi_task *t) { (void)c; (void)t; }
static void stub_terminate(struct iscsi_conn *c) { (void)c; }
static int stub_ffp(struct iscsi_conn *c) { (void)c; return 0; }
static void stub_exit(void) { }
static void stub_addrs(struct iscsi_conn *c, char *peer, size_t plen, char *local, size_t llen)
{
	(void)c;
	if (plen)
		peer[0] = '\0';
	if (llen)
		local[0] = '\0';
}

static int default_buf_get(struct iscsi_conn *c, struct iscsi_task *t)
{
	(void)c;
	t->buf = gw_buf_alloc(t->edtl);
	return t->buf ? 0 : -ENOMEM;
}

static void default_buf_put(struct iscsi_conn *c, struct iscsi_task *t)
{
	(void)c;
	gw_buf_free(t->buf, t->edtl);
	t->buf = NULL;
}

void gw_dm_fill_ops(struct gw_dm_ops *ops)
{
	if (!ops->buf_get) ops->buf_get = default_buf_get;
	if (!ops->buf_put) ops->buf_put = default_buf_put;
	if (!ops->listen) ops->listen = stub_listen;
	if (!ops->unlisten) ops->unlisten = stub_unlisten;
	if (!ops->send_control) ops->send_control = stub_send;
	if (!ops->put_data) ops->put_data = stub_task;
	if (!ops->get_data) ops->get_data = stub_task;
	if (!ops->release_task) ops->release_task = stub_release;
	if (!ops->terminate) ops->terminate = stub_terminate;
	if (!ops->enter_ffp) ops->enter_ffp = stub_ffp;
	if (!ops->addrs) ops->addrs = stub_addrs;
	if (!ops->thread_exit) ops->thread_exit = stub_exit;
	if (!ops->global_exit) ops->global_exit = stub_exit;
}

/* index: enum gw_transport */
static struct gw_dm_ops *registered[GW_TRANSPORT_ISER + 1];

int gw_dm_register(struct gw_dm_ops *ops)
{
	if ((unsigned int)ops->transport >= sizeof(registered) / sizeof(registered[0]))
		return -EINVAL;
	if (registered[ops->transport])
		return -EEXIST;
	gw_dm_fill_ops(ops);
	registered[ops->transport] = ops;
	return 0;
}

const struct gw_dm_ops *gw_dm_for_transport(enum gw_transport t)
{
	if ((unsigned int)t >= sizeof(registered) / sizeof(registered[0]))
		return NULL;
	return registered[t];
}

void gw_dm_thread_exit(void)
{
	for (size_t i = 0; i < sizeof(registered) / sizeof(registered[0]); i++)
		if (registered[i])
			registered[i]->thread_exit();
}

void gw_dm_global_exit(void)
{
	for (size_t i = 0; i < sizeof(registered) / sizeof(registered[0]); i++)
		if (registered[i])
			registered[i]->global_exit();
}
