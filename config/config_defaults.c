/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration's defaults: those of each object before it is parsed,
 * and the derived ones after it is validated (gw_config_finalize: portal
 * ids and tags, each LUN's serial and NAA from its target's IQN).
 */
#include "config/config.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "config/names.h"
#include "config_priv.h"

/* ------------------------------------------------------------------------ */
/* defaults                                                                 */

void gw_portal_defaults(struct gw_portal_cfg *p)
{
	memset(p, 0, sizeof(*p));
	p->transport = GW_TRANSPORT_TCP;
	p->port = 3260;
	p->tpgt = 0;        /* 0 = its rel_port_id, filled by finalize */
	p->rel_port_id = 0; /* 0 = its 1-based index, filled by finalize */
	p->tpg_id = 1;
}

void gw_lun_defaults(struct gw_lun_cfg *l)
{
	memset(l, 0, sizeof(*l));
	l->block_size = 512;
	l->write_cache = true;
	l->thin = true;
	(void)cfg_str_copy(l->vendor, sizeof(l->vendor), "ISERGW");
	(void)cfg_str_copy(l->product, sizeof(l->product), "isergw disk");
	l->backend_sessions = 1;
	l->backend_hold_s = 30;
	l->backend_timeout_s = 15;
	l->backend_read_chunk = 256u << 10;
}

void gw_target_defaults(struct gw_target_cfg *t)
{
	memset(t, 0, sizeof(*t));
	t->max_recv_dsl = 262144;
	t->max_burst = 16776192;
	t->first_burst = 262144;
	t->max_outstanding_r2t = 1;
	t->initial_r2t = false;
	t->immediate_data = true;
	t->queue_depth = 128;
}

void gw_config_defaults(struct gw_config *c)
{
	memset(c, 0, sizeof(*c));
	c->reactors = 0;
	(void)cfg_str_copy(c->log_level, sizeof(c->log_level), "notice");
	(void)cfg_str_copy(c->state_dir, sizeof(c->state_dir), "/var/lib/isergw");
	(void)cfg_str_copy(c->ctl_socket, sizeof(c->ctl_socket), "/run/isergw/isergwd.sock");
	c->nop_interval_s = 5;
	c->nop_timeout_s = 30;
	c->login_timeout_s = 15;
	c->max_logins_per_address = 64;
	c->tcp_splice = true;
	c->alua_request_timeout_ms = 10000;
	c->alua_lease = false;
	c->alua_lease_unavailable_ms = 2000;
	c->backend_fencing = true;
}

void gw_config_free(struct gw_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->ntargets; i++) {
		free(c->targets[i].luns);
		free(c->targets[i].acls);
	}
	free(c->targets);
	free(c->portals);
	free(c->port_groups);
	free(c->device_groups);
	free(c);
}

/* ------------------------------------------------------------------------ */
/* derived defaults                                                         */

#define FNV64_PRIME  0x100000001b3ull

uint64_t cfg_fnv1a64(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= FNV64_PRIME;
	}
	return h;
}

/*
 * h1 = FNV-1a 64 over "<target iqn>" NUL "<lun in decimal>";
 * h2 = the same hash continued over the 3 bytes "naa".
 */
static void lun_hashes(const char *iqn, uint32_t lun, uint64_t *h1, uint64_t *h2)
{
	char num[16];
	int n = snprintf(num, sizeof(num), "%u", lun);
	uint64_t h = cfg_fnv1a64(FNV64_OFFSET, iqn, strlen(iqn) + 1);

	h = cfg_fnv1a64(h, num, (size_t)n);
	*h1 = h;
	*h2 = cfg_fnv1a64(h, "naa", 3);
}

/* A LUN's derived defaults: serial and NAA from the target's IQN and the LUN number. */
void cfg_lun_finalize(const char *iqn, struct gw_lun_cfg *l)
{
	uint64_t h1, h2, vs;

	lun_hashes(iqn, l->lun, &h1, &h2);
	if (!l->serial[0])
		snprintf(l->serial, sizeof(l->serial), "%016llx", (unsigned long long)h1);
	if (l->naa_set)
		return;
	/*
	 * NAA 6: 4 bits NAA | 24 bits company ID | 36 bits vendor
	 * specific (top of h2) | 64 bits extension (h1, the serial).
	 */
	vs = h2 >> 28;
	l->naa[0] = (uint8_t)(0x60 | ((GW_NAA_DEFAULT_CID >> 20) & 0x0f));
	l->naa[1] = (uint8_t)(GW_NAA_DEFAULT_CID >> 12);
	l->naa[2] = (uint8_t)(GW_NAA_DEFAULT_CID >> 4);
	l->naa[3] = (uint8_t)((GW_NAA_DEFAULT_CID & 0x0f) << 4 | (vs >> 32));
	l->naa[4] = (uint8_t)(vs >> 24);
	l->naa[5] = (uint8_t)(vs >> 16);
	l->naa[6] = (uint8_t)(vs >> 8);
	l->naa[7] = (uint8_t)vs;
	for (int b = 0; b < 8; b++)
		l->naa[8 + b] = (uint8_t)(h1 >> (56 - 8 * b));
	l->naa_set = true;
}

void gw_config_finalize(struct gw_config *c)
{
	for (size_t i = 0; i < c->nportals; i++) {
		struct gw_portal_cfg *p = &c->portals[i];

		if (!p->rel_port_id)
			p->rel_port_id = (uint16_t)(i + 1);
		if (!p->tpgt)
			p->tpgt = p->rel_port_id;
		if (!p->tpg_id)
			p->tpg_id = 1;
	}
	for (size_t ti = 0; ti < c->ntargets; ti++) {
		struct gw_target_cfg *t = &c->targets[ti];

		for (size_t li = 0; li < t->nluns; li++)
			cfg_lun_finalize(t->iqn, &t->luns[li]);
	}
}
