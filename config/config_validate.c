/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration's cross-field rules (gw_config_validate): names, CHAP,
 * portals, ALUA groups, each target and LUN, and no backing store used twice
 * (gw_config_check_stores, gw_config_check_files).
 */
#include "config/config.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include "common/log.h"
#include "config/names.h"
#include "config_priv.h"

/* ------------------------------------------------------------------------ */
/* validation                                                               */

/* A name of kind (names.h) at path: the shared check and its words. */
static int check_name(char *err, size_t errlen, const char *path, enum gw_name_kind kind,
		      const char *n, size_t sz)
{
	char msg[384];

	if (!cfg_str_terminated(n, sz))
		return gw_errf(err, errlen, -EINVAL, "%s: not terminated", path);
	if (gw_name_check(kind, n, strlen(n), msg, sizeof(msg)))
		return gw_errf(err, errlen, -EINVAL, "%s: %s", path, msg);
	return 0;
}

static bool chap_set(const struct gw_chap_cfg *ch)
{
	return ch->user[0] != '\0';
}

static int check_chap(char *err, size_t errlen, const char *path, const struct gw_chap_cfg *ch)
{
	size_t slen;

	if (!cfg_str_terminated(ch->user, sizeof(ch->user)) || !cfg_str_terminated(ch->secret, sizeof(ch->secret)))
		return gw_errf(err, errlen, -EINVAL, "%s: user or secret longer than %d bytes", path,
			       GW_SECRET_MAX - 1);
	slen = strlen(ch->secret);
	if ((ch->user[0] == '\0') != (slen == 0))
		return gw_errf(err, errlen, -EINVAL, "%s: user and secret must both be set or both be empty",
			       path);
	if (slen && slen < CFG_SECRET_WARN)
		GW_WARN(CFG_COMP, "%s.secret: only %zu bytes; RFC 7143 wants at least %u and some "
			"initiators (Windows) refuse shorter ones", path, slen, CFG_SECRET_WARN);
	return 0;
}

static uint16_t portal_rel_id(const struct gw_config *c, size_t i)
{
	return c->portals[i].rel_port_id ? c->portals[i].rel_port_id : (uint16_t)(i + 1);
}

/* A portal's TPGT: 0 means its relative port id (before finalize too). */
static uint16_t portal_tpgt(const struct gw_config *c, size_t i)
{
	return c->portals[i].tpgt ? c->portals[i].tpgt : portal_rel_id(c, i);
}

static int validate_portals(const struct gw_config *c, char *err, size_t errlen)
{
	for (size_t i = 0; i < c->nportals; i++) {
		const struct gw_portal_cfg *p = &c->portals[i];

		if (i >= 65535)
			return gw_errf(err, errlen, -EINVAL, "portals: too many (max 65535)");
		if (p->port == 0)
			return gw_errf(err, errlen, -EINVAL, "portals[%zu].url: port must be 1..65535", i);
		if (!cfg_str_terminated(p->addr, sizeof(p->addr)) || !p->addr[0])
			return gw_errf(err, errlen, -EINVAL, "portals[%zu].url: bad address", i);
		for (size_t j = 0; j < i; j++) {
			const struct gw_portal_cfg *q = &c->portals[j];

			if (portal_rel_id(c, i) == portal_rel_id(c, j))
				return gw_errf(err, errlen, -EINVAL,
					       "portals[%zu].rel_port_id: %u already used by portals[%zu]",
					       i, portal_rel_id(c, i), j);
			if (p->transport == q->transport && p->port == q->port &&
			    strcmp(p->addr, q->addr) == 0)
				return gw_errf(err, errlen, -EINVAL, "portals[%zu].url: same address as portals[%zu]",
					       i, j);
			/* an iSCSI target port is (target name, TPGT): one TPGT per relative port */
			if (portal_tpgt(c, i) == portal_tpgt(c, j))
				return gw_errf(err, errlen, -EINVAL,
					       "portals[%zu].tpgt: %u%s is already the TPGT of portals[%zu] "
					       "(rel_port_id %u), but portals[%zu].rel_port_id is %u: each "
					       "relative port needs a TPGT of its own",
					       i, portal_tpgt(c, i), p->tpgt ? "" : " (its rel_port_id)", j,
					       portal_rel_id(c, j), i, portal_rel_id(c, i));
		}
	}
	return 0;
}

/* The group listing relative port rel in port_groups, or NULL. */
static const struct gw_port_group_cfg *port_group_of(const struct gw_config *c, uint16_t rel)
{
	for (size_t i = 0; i < c->nport_groups; i++)
		for (size_t k = 0; k < c->port_groups[i].nrel_port_ids; k++)
			if (c->port_groups[i].rel_port_ids[k] == rel)
				return &c->port_groups[i];
	return NULL;
}

static bool tpg_known(const struct gw_config *c, uint16_t tpg)
{
	for (size_t i = 0; i < c->nport_groups; i++)
		if (c->port_groups[i].tpg_id == tpg)
			return true;
	for (size_t i = 0; i < c->nportals; i++)
		if (c->portals[i].tpg_id == tpg)
			return true;
	return false;
}

static bool dg_known(const struct gw_config *c, const char *name)
{
	if (!name[0] || strcmp(name, "default") == 0)
		return true;
	for (size_t i = 0; i < c->ndevice_groups; i++)
		if (strcmp(c->device_groups[i].name, name) == 0)
			return true;
	return false;
}

/* port_groups, device_groups, and the LUNs' device_group. */
static int validate_alua(const struct gw_config *c, char *err, size_t errlen)
{
	for (size_t i = 0; i < c->nport_groups; i++) {
		const struct gw_port_group_cfg *g = &c->port_groups[i];

		if (g->tpg_id == 0)
			return gw_errf(err, errlen, -EINVAL, "port_groups[%zu].tpg_id: must be 1..65535", i);
		if (g->nrel_port_ids == 0 || g->nrel_port_ids > GW_PG_PORTS_MAX)
			return gw_errf(err, errlen, -EINVAL, "port_groups[%zu].rel_port_ids: 1..%u ports", i,
				       GW_PG_PORTS_MAX);
		for (size_t j = 0; j < i; j++)
			if (c->port_groups[j].tpg_id == g->tpg_id)
				return gw_errf(err, errlen, -EINVAL,
					       "port_groups[%zu].tpg_id: %u already used by port_groups[%zu]",
					       i, g->tpg_id, j);
		for (size_t k = 0; k < g->nrel_port_ids; k++) {
			uint16_t rel = g->rel_port_ids[k];
			const struct gw_port_group_cfg *o = port_group_of(c, rel);

			if (o != g)
				return gw_errf(err, errlen, -EINVAL,
					       "port_groups[%zu].rel_port_ids: %u is also in target port group %u",
					       i, rel, o->tpg_id);
			for (size_t m = 0; m < k; m++)
				if (g->rel_port_ids[m] == rel)
					return gw_errf(err, errlen, -EINVAL,
						       "port_groups[%zu].rel_port_ids: %u listed twice", i, rel);
		}
	}
	/* this node's portals must sit where the cluster map says */
	for (size_t i = 0; c->nport_groups && i < c->nportals; i++) {
		uint16_t rel = portal_rel_id(c, i);
		const struct gw_port_group_cfg *g = port_group_of(c, rel);

		if (!g)
			return gw_errf(err, errlen, -EINVAL,
				       "portals[%zu].rel_port_id: %u is not listed in port_groups", i, rel);
		if (g->tpg_id != c->portals[i].tpg_id)
			return gw_errf(err, errlen, -EINVAL,
				       "portals[%zu].tpg_id: %u, but port_groups lists relative port %u "
				       "under target port group %u", i, c->portals[i].tpg_id, rel, g->tpg_id);
	}
	for (size_t i = 0; i < c->ndevice_groups; i++) {
		const struct gw_device_group_cfg *d = &c->device_groups[i];

		if (!cfg_str_terminated(d->name, sizeof(d->name)) || !d->name[0] ||
		    !cfg_printable_ascii(d->name))
			return gw_errf(err, errlen, -EINVAL, "device_groups[%zu].name: 1..%d printable ASCII characters",
				       i, GW_DG_NAME_MAX - 1);
		for (size_t j = 0; j < i; j++)
			if (strcmp(c->device_groups[j].name, d->name) == 0)
				return gw_errf(err, errlen, -EINVAL,
					       "device_groups[%zu].name: \"%s\" already used by device_groups[%zu]",
					       i, d->name, j);
		if (d->owner_tpg_id && !tpg_known(c, d->owner_tpg_id))
			return gw_errf(err, errlen, -EINVAL,
				       "device_groups[%zu].owner_tpg_id: %u is neither in port_groups nor a portal's tpg_id",
				       i, d->owner_tpg_id);
		if (d->non_owner_state < 1 || d->non_owner_state > 3)
			return gw_errf(err, errlen, -EINVAL, "device_groups[%zu].non_owner_state: invalid", i);
	}
	for (size_t ti = 0; ti < c->ntargets; ti++) {
		for (size_t li = 0; li < c->targets[ti].nluns; li++) {
			const struct gw_lun_cfg *l = &c->targets[ti].luns[li];

			if (!cfg_str_terminated(l->device_group, sizeof(l->device_group)) ||
			    !dg_known(c, l->device_group))
				return gw_errf(err, errlen, -EINVAL,
					       "targets[%zu].luns[%zu].device_group: \"%s\" is not in device_groups",
					       ti, li, l->device_group);
		}
	}
	return 0;
}

/* One LUN's own fields (not against the other LUNs). */
int cfg_validate_lun_one(const struct gw_lun_cfg *l, size_t ti, size_t li, char *err,
			    size_t errlen)
{
	char path[96];
	int rc;

	if (l->lun >= CFG_LUN_MAX)
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].lun: %u out of range (0..%u)", ti,
			       li, l->lun, CFG_LUN_MAX - 1);
	if (!cfg_str_terminated(l->path, sizeof(l->path)) || !l->path[0])
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].path: missing", ti, li);
	snprintf(path, sizeof(path), "targets[%zu].luns[%zu].path", ti, li);
	rc = check_name(err, errlen, path, GW_NAME_PATH, l->path, sizeof(l->path));
	if (rc)
		return rc;
	if (l->block_size != 512 && l->block_size != 4096)
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].block_size: %u is not 512 or 4096",
			       ti, li, l->block_size);
	if (l->size > INT64_MAX || l->size % l->block_size)
		return gw_errf(err, errlen, -EINVAL,
			       "targets[%zu].luns[%zu].size: %llu is not a multiple of block_size %u",
			       ti, li, (unsigned long long)l->size, l->block_size);
	if (!cfg_str_terminated(l->serial, sizeof(l->serial)) || !cfg_printable_ascii(l->serial))
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].serial: printable ASCII only", ti, li);
	if (!cfg_str_terminated(l->vendor, sizeof(l->vendor)) || !cfg_printable_ascii(l->vendor))
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].vendor: printable ASCII only, max 8",
			       ti, li);
	if (!cfg_str_terminated(l->product, sizeof(l->product)) || !cfg_printable_ascii(l->product))
		return gw_errf(err, errlen, -EINVAL,
			       "targets[%zu].luns[%zu].product: printable ASCII only, max 16", ti, li);
	if (l->backend_read_chunk % 4096 || l->backend_read_chunk > (8u << 20))
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].backend_read_chunk: %llu is not a "
			       "multiple of 4K up to 8M (0 = never)", ti, li,
			       (unsigned long long)l->backend_read_chunk);
	if (l->max_transfer && (l->max_transfer % l->block_size || l->max_transfer > (8u << 20)))
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].max_transfer: %llu is not a multiple "
			       "of block_size %u up to 8M", ti, li,
			       (unsigned long long)l->max_transfer, l->block_size);
	if (l->naa_set && (l->naa[0] >> 4) != 6)
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].naa: must be NAA type 6", ti, li);
	if (l->backend_initiator[0]) {
		snprintf(path, sizeof(path), "targets[%zu].luns[%zu].backend_initiator", ti, li);
		return check_name(err, errlen, path, GW_NAME_ISCSI, l->backend_initiator,
				  sizeof(l->backend_initiator));
	}
	return 0;
}

static int validate_lun(const struct gw_target_cfg *t, size_t ti, size_t li, char *err, size_t errlen)
{
	const struct gw_lun_cfg *l = &t->luns[li];
	int rc = cfg_validate_lun_one(l, ti, li, err, errlen);

	if (rc)
		return rc;
	for (size_t j = 0; j < li; j++)
		if (t->luns[j].lun == l->lun)
			return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].lun: %u already used by luns[%zu]",
				       ti, li, l->lun, j);
	return 0;
}

static int validate_target(const struct gw_config *c, size_t ti, char *err, size_t errlen)
{
	const struct gw_target_cfg *t = &c->targets[ti];
	char path[96];
	int rc;

	snprintf(path, sizeof(path), "targets[%zu].iqn", ti);
	rc = check_name(err, errlen, path, GW_NAME_ISCSI, t->iqn, sizeof(t->iqn));
	if (rc)
		return rc;
	for (size_t j = 0; j < ti; j++)
		if (strcmp(c->targets[j].iqn, t->iqn) == 0)
			return gw_errf(err, errlen, -EINVAL, "targets[%zu].iqn: \"%s\" already used by targets[%zu]",
				       ti, t->iqn, j);
	snprintf(path, sizeof(path), "targets[%zu].alias", ti);
	rc = check_name(err, errlen, path, GW_NAME_ALIAS, t->alias, sizeof(t->alias));
	if (rc)
		return rc;

	snprintf(path, sizeof(path), "targets[%zu].chap", ti);
	rc = check_chap(err, errlen, path, &t->chap);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "targets[%zu].mutual_chap", ti);
	rc = check_chap(err, errlen, path, &t->mutual_chap);
	if (rc)
		return rc;
	if (chap_set(&t->mutual_chap) && !chap_set(&t->chap))
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].mutual_chap: needs chap as well", ti);
	if (chap_set(&t->mutual_chap) && strcmp(t->mutual_chap.secret, t->chap.secret) == 0)
		return gw_errf(err, errlen, -EINVAL,
			       "targets[%zu].mutual_chap.secret: must differ from chap.secret (RFC 7143 9.2.1)",
			       ti);

	if (t->max_recv_dsl < CFG_DSL_MIN || t->max_recv_dsl > CFG_DSL_MAX)
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].max_recv_dsl: %u out of range (%u..%u)", ti,
			       t->max_recv_dsl, CFG_DSL_MIN, CFG_DSL_MAX);
	if (t->max_burst < CFG_DSL_MIN || t->max_burst > CFG_DSL_MAX)
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].max_burst: %u out of range (%u..%u)", ti,
			       t->max_burst, CFG_DSL_MIN, CFG_DSL_MAX);
	if (t->first_burst < CFG_DSL_MIN || t->first_burst > t->max_burst)
		return gw_errf(err, errlen, -EINVAL,
			       "targets[%zu].first_burst: %u must be in %u..max_burst (%u)", ti,
			       t->first_burst, CFG_DSL_MIN, t->max_burst);
	if (t->max_outstanding_r2t < 1 || t->max_outstanding_r2t > 65535)
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].max_outstanding_r2t: out of range (1..65535)",
			       ti);
	if (t->queue_depth < 1 || t->queue_depth > CFG_QDEPTH_MAX)
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].queue_depth: out of range (1..%u)", ti,
			       CFG_QDEPTH_MAX);

	for (size_t ai = 0; ai < t->nacls; ai++) {
		const struct gw_acl_cfg *a = &t->acls[ai];

		snprintf(path, sizeof(path), "targets[%zu].acls[%zu].initiator", ti, ai);
		rc = check_name(err, errlen, path, GW_NAME_ISCSI, a->initiator, sizeof(a->initiator));
		if (rc)
			return rc;
		for (size_t j = 0; j < ai; j++)
			if (strcmp(t->acls[j].initiator, a->initiator) == 0)
				return gw_errf(err, errlen, -EINVAL, "%s: \"%s\" already used by acls[%zu]", path,
					       a->initiator, j);
		snprintf(path, sizeof(path), "targets[%zu].acls[%zu].chap", ti, ai);
		rc = check_chap(err, errlen, path, &a->chap);
		if (rc)
			return rc;
	}

	for (size_t li = 0; li < t->nluns; li++) {
		rc = validate_lun(t, ti, li, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* one store, one LUN                                                       */


static char lower(char ch)
{
	return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

/* Appends n bytes of s to out[*o..len), lower-cased if asked. */
static int key_put(char *out, size_t len, size_t *o, const char *s, size_t n, bool fold)
{
	if (*o + n >= len)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < n; i++)
		out[(*o)++] = fold ? lower(s[i]) : s[i];
	out[*o] = '\0';
	return 0;
}

/*
 * iscsi://[user%secret@]HOST[:PORT]/IQN/LUN -> iscsi://host:port/iqn/lun.
 * Lenient: what is not a URL isergwd can open still gets a key (opening it
 * fails later, with its own message).
 */
static int url_key(const char *url, char *out, size_t len)
{
	const char *p = url + 8, *slash = strchr(p, '/'), *hend, *port = "3260", *pend;
	const char *iqn, *iend, *lun;
	size_t o = 0, plen = 4;
	int rc;

	if (!slash)
		slash = p + strlen(p);
	for (const char *q = p; q < slash; q++)
		if (*q == '@')
			p = q + 1;  /* the credentials are not part of the store */
	if (*p == '[') {
		hend = memchr(p, ']', (size_t)(slash - p));
		hend = hend ? hend + 1 : slash;
	} else {
		hend = memchr(p, ':', (size_t)(slash - p));
		if (!hend)
			hend = slash;
	}
	if (*hend == ':' && hend + 1 < slash) {
		port = hend + 1;
		while (*port == '0' && port + 1 < slash)
			port++;
		plen = (size_t)(slash - port);
	}
	/* IQN and LUN: no empty parts, no trailing slash */
	iqn = slash;
	while (*iqn == '/')
		iqn++;
	iend = iqn + strcspn(iqn, "/");
	lun = iend;
	while (*lun == '/')
		lun++;
	pend = lun + strcspn(lun, "/");
	while (*lun == '0' && lun + 1 < pend)
		lun++;
	if ((rc = key_put(out, len, &o, "iscsi://", 8, false)) ||
	    (rc = key_put(out, len, &o, p, (size_t)(hend - p), true)) ||
	    (rc = key_put(out, len, &o, ":", 1, false)) ||
	    (rc = key_put(out, len, &o, port, plen, false)) ||
	    (rc = key_put(out, len, &o, "/", 1, false)) ||
	    (rc = key_put(out, len, &o, iqn, (size_t)(iend - iqn), true)) ||
	    (rc = key_put(out, len, &o, "/", 1, false)) ||
	    (rc = key_put(out, len, &o, lun, (size_t)(pend - lun), false)))
		return rc;
	/* anything after the LUN but slashes stays: another (bad) URL */
	while (*pend == '/')
		pend++;
	return key_put(out, len, &o, pend, strlen(pend), false);
}

/* A path with "//", "/./", "DIR/.." and a trailing slash folded away. */
static int file_key(const char *path, char *out, size_t len)
{
	bool abs = path[0] == '/';
	size_t o = 0, keep = 0;  /* keep: out[0..keep) is ".." parts that stay */
	const char *p = path;
	int rc;

	if (abs && (rc = key_put(out, len, &o, "/", 1, false)))
		return rc;
	keep = o;
	out[o] = '\0';
	while (*p) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n == 1 && p[0] == '.') {
			p += n;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			p += n;
			if (o > keep) {
				/* drop the last part */
				while (o > keep && out[o - 1] != '/')
					o--;
				if (o > keep && !(abs && o == 1))
					o--;
				out[o] = '\0';
				continue;
			}
			if (abs)
				continue;  /* "/.." is "/" */
			if ((o && (rc = key_put(out, len, &o, "/", 1, false))) ||
			    (rc = key_put(out, len, &o, "..", 2, false)))
				return rc;
			keep = o;
			continue;
		}
		if (o && out[o - 1] != '/' && (rc = key_put(out, len, &o, "/", 1, false)))
			return rc;
		if ((rc = key_put(out, len, &o, p, n, false)))
			return rc;
		p += n;
	}
	if (!o)
		return key_put(out, len, &o, ".", 1, false);
	return 0;
}

int gw_store_key(const char *path, char *out, size_t len)
{
	if (!len)
		return -ENAMETOOLONG;
	out[0] = '\0';
	return strncmp(path, "iscsi://", 8) == 0 ? url_key(path, out, len) :
	       file_key(path, out, len);
}

struct store_ref {
	uint64_t hash;
	size_t ti, li;
};

static int store_ref_cmp(const void *a, const void *b)
{
	const struct store_ref *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->ti != y->ti)
		return x->ti < y->ti ? -1 : 1;
	return x->li < y->li ? -1 : x->li > y->li;
}

static bool ref_before(const struct store_ref *x, const struct store_ref *y)
{
	return x->ti < y->ti || (x->ti == y->ti && x->li < y->li);
}

int gw_store_conflict(char *err, size_t errlen, const char *what, const char *iqn, uint32_t lun,
		      const char *other_iqn, uint32_t other_lun, const char *key)
{
	return gw_errf(err, errlen, -EINVAL, "%s%sLUN %u of %s and LUN %u of %s name one backing store "
		       "(%s): a store belongs to one LUN", what ? what : "", what ? ": " : "", lun,
		       iqn, other_lun, other_iqn, key);
}

static void ref_key(const struct gw_config *c, const struct store_ref *r, char *out)
{
	if (gw_store_key(c->targets[r->ti].luns[r->li].path, out, GW_STORE_KEY_MAX))
		out[0] = '\0';
}

/*
 * How LUNs on one store are found: hash, a LUN's store hashed (false: none
 * to compare); same, whether two LUNs are on one store; both may use
 * scratch_len bytes of scratch.
 */
struct store_ident {
	size_t scratch_len;
	bool (*hash)(const struct gw_config *c, size_t ti, size_t li, uint64_t *hash, void *scratch);
	bool (*same)(const struct gw_config *c, const struct store_ref *x, const struct store_ref *y,
		     void *scratch);
};

/*
 * By the hashes sorted, those of one hash compared: the first LUN (in the
 * order of the file) whose store an earlier LUN has, in *hit, and that LUN,
 * in *first. 1 (found), 0 or -ENOMEM; *scratch (id->scratch_len bytes, or
 * NULL) is the caller's to free (scratch NULL: not wanted).
 */
static int find_shared_store(const struct gw_config *c, const struct store_ident *id,
			     void **scratch, struct store_ref *hit, struct store_ref *first)
{
	const struct store_ref *h = NULL, *f = NULL;
	struct store_ref *refs;
	size_t n = 0, total = 0;
	void *s = NULL;

	if (scratch)
		*scratch = NULL;
	for (size_t ti = 0; ti < c->ntargets; ti++)
		total += c->targets[ti].nluns;
	if (total < 2)
		return 0;
	refs = calloc(total, sizeof(*refs));
	if (id->scratch_len)
		s = malloc(id->scratch_len);
	if (!refs || (id->scratch_len && !s)) {
		free(refs);
		free(s);
		return -ENOMEM;
	}
	for (size_t ti = 0; ti < c->ntargets; ti++)
		for (size_t li = 0; li < c->targets[ti].nluns; li++) {
			if (!id->hash(c, ti, li, &refs[n].hash, s))
				continue;
			refs[n].ti = ti;
			refs[n++].li = li;
		}
	qsort(refs, n, sizeof(*refs), store_ref_cmp);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a + 1; b < n && refs[b].hash == refs[a].hash; b++)
			;
		/* one hash, in the order of the file: the first earlier LUN on the same store */
		for (size_t j = a + 1; j < b && !(h && !ref_before(&refs[j], h)); j++) {
			for (size_t i = a; i < j; i++)
				if (id->same(c, &refs[j], &refs[i], s)) {
					h = &refs[j];
					f = &refs[i];
					break;
				}
			if (h == &refs[j])
				break;
		}
	}
	if (h) {
		*hit = *h;
		*first = *f;
	}
	free(refs);
	if (scratch)
		*scratch = s;
	else
		free(s);
	return h != NULL;
}

/* A LUN's key (gw_store_key) hashed; too long to be opened anyway: none. */
static bool key_hash(const struct gw_config *c, size_t ti, size_t li, uint64_t *hash,
		     void *scratch)
{
	char *k = scratch;

	if (gw_store_key(c->targets[ti].luns[li].path, k, GW_STORE_KEY_MAX))
		return false;
	*hash = cfg_fnv1a64(FNV64_OFFSET, k, strlen(k));
	return true;
}

static bool key_same(const struct gw_config *c, const struct store_ref *x,
		     const struct store_ref *y, void *scratch)
{
	char *k1 = scratch, *k2 = k1 + GW_STORE_KEY_MAX;

	ref_key(c, x, k1);
	ref_key(c, y, k2);
	return !strcmp(k1, k2);
}

int gw_config_check_stores(const struct gw_config *c, char *err, size_t errlen)
{
	static const struct store_ident by_key = {
		.scratch_len = 2 * GW_STORE_KEY_MAX, .hash = key_hash, .same = key_same,
	};
	struct store_ref hit, first;
	const struct gw_target_cfg *t, *o;
	char what[96];
	void *k;
	int rc;

	rc = find_shared_store(c, &by_key, &k, &hit, &first);
	if (rc <= 0) {
		free(k);
		if (rc)
			gw_errf(err, errlen, -EINVAL, "out of memory");
		return rc;
	}
	t = &c->targets[hit.ti];
	o = &c->targets[first.ti];
	ref_key(c, &hit, k);
	snprintf(what, sizeof(what), "targets[%zu].luns[%zu].path", hit.ti, hit.li);
	rc = gw_store_conflict(err, errlen, what, t->iqn, t->luns[hit.li].lun, o->iqn,
			       o->luns[first.li].lun, k);
	free(k);
	return rc;
}

/* What a LUN's path is in the file system: device + inode, a block device's number. */
static bool file_ident(const char *path, uint64_t id[2], bool *blk)
{
	struct stat st;

	if (strncmp(path, "iscsi://", 8) == 0 || stat(path, &st) != 0)
		return false;
	*blk = S_ISBLK(st.st_mode);
	id[0] = *blk ? (uint64_t)st.st_rdev : (uint64_t)st.st_dev;
	id[1] = *blk ? 0 : (uint64_t)st.st_ino;
	return true;
}

/* Missing ones are created (or refused) when opened: none. */
static bool file_hash(const struct gw_config *c, size_t ti, size_t li, uint64_t *hash,
		      void *scratch)
{
	uint64_t id[2];
	bool blk;

	(void)scratch;
	if (!file_ident(c->targets[ti].luns[li].path, id, &blk))
		return false;
	*hash = cfg_fnv1a64(cfg_fnv1a64(FNV64_OFFSET, id, sizeof(id)), &blk, 1);
	return true;
}

static bool file_same(const struct gw_config *c, const struct store_ref *x,
		      const struct store_ref *y, void *scratch)
{
	uint64_t idx[2], idy[2];
	bool blkx, blky;

	(void)scratch;
	return file_ident(c->targets[x->ti].luns[x->li].path, idx, &blkx) &&
	       file_ident(c->targets[y->ti].luns[y->li].path, idy, &blky) &&
	       blkx == blky && idx[0] == idy[0] && idx[1] == idy[1];
}

int gw_config_check_files(const struct gw_config *c, char *err, size_t errlen)
{
	static const struct store_ident by_file = { .hash = file_hash, .same = file_same };
	struct store_ref hit, first;
	const struct gw_target_cfg *t, *o;
	const char *p1, *p2;
	char what[96], *desc;
	uint64_t id[2];
	size_t dl;
	bool blk;
	int rc;

	rc = find_shared_store(c, &by_file, NULL, &hit, &first);
	if (rc <= 0)
		return rc;
	t = &c->targets[hit.ti];
	o = &c->targets[first.ti];
	p1 = o->luns[first.li].path;
	p2 = t->luns[hit.li].path;
	dl = strlen(p1) + strlen(p2) + 96;
	desc = malloc(dl);
	if (!desc)
		return -ENOMEM;
	if (!file_ident(p2, id, &blk))
		id[0] = id[1] = 0, blk = false;
	if (blk)
		snprintf(desc, dl, "%s and %s are one block device, %u:%u", p1, p2,
			 major((dev_t)id[0]), minor((dev_t)id[0]));
	else
		snprintf(desc, dl, "%s and %s are one file, device %u:%u inode %llu", p1, p2,
			 major((dev_t)id[0]), minor((dev_t)id[0]), (unsigned long long)id[1]);
	snprintf(what, sizeof(what), "targets[%zu].luns[%zu].path", hit.ti, hit.li);
	rc = gw_store_conflict(err, errlen, what, t->iqn, t->luns[hit.li].lun, o->iqn,
			       o->luns[first.li].lun, desc);
	free(desc);
	return rc;
}

int gw_config_validate(const struct gw_config *c, char *err, size_t errlen)
{
	enum gw_log_level lvl;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!c)
		return gw_errf(err, errlen, -EINVAL, "config: none");
	if (!cfg_str_terminated(c->log_level, sizeof(c->log_level)) ||
	    gw_log_parse_level(c->log_level, &lvl))
		return gw_errf(err, errlen, -EINVAL, "log_level: not one of err, warn, notice, info, debug");
	if (c->reactors > CFG_REACTORS_MAX)
		return gw_errf(err, errlen, -EINVAL, "reactors: %u out of range (0..%u)", c->reactors,
			       CFG_REACTORS_MAX);
	if (!cfg_str_terminated(c->state_dir, sizeof(c->state_dir)) || !c->state_dir[0])
		return gw_errf(err, errlen, -EINVAL, "state_dir: must not be empty");
	if (!cfg_str_terminated(c->ctl_socket, sizeof(c->ctl_socket)) || !c->ctl_socket[0] ||
	    strlen(c->ctl_socket) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return gw_errf(err, errlen, -EINVAL, "ctl_socket: must be 1..%zu bytes (a unix socket path)",
			       sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	if (c->nbackend_pr_fence > GW_PR_FENCE_MAX)
		return gw_errf(err, errlen, -EINVAL, "backend_pr_fence: at most %u keys", GW_PR_FENCE_MAX);
	for (size_t i = 0; i < c->nbackend_pr_fence; i++) {
		if (!c->backend_pr_fence[i])
			return gw_errf(err, errlen, -EINVAL, "backend_pr_fence[%zu]: zero is not a key", i);
		if (c->backend_pr_fence[i] == c->backend_pr_key)
			return gw_errf(err, errlen, -EINVAL, "backend_pr_fence[%zu]: 0x%016llx is this node's "
				       "own backend_pr_key", i, (unsigned long long)c->backend_pr_key);
		for (size_t j = 0; j < i; j++)
			if (c->backend_pr_fence[j] == c->backend_pr_fence[i])
				return gw_errf(err, errlen, -EINVAL, "backend_pr_fence[%zu]: 0x%016llx already "
					       "listed at [%zu]", i,
					       (unsigned long long)c->backend_pr_fence[i], j);
	}
	/* room for "/lu-<32 hex digits>.state" */
	if (!cfg_str_terminated(c->shared_state_dir, sizeof(c->shared_state_dir)) ||
	    strlen(c->shared_state_dir) > sizeof(c->shared_state_dir) - 48)
		return gw_errf(err, errlen, -EINVAL, "shared_state_dir: longer than %zu bytes",
			       sizeof(c->shared_state_dir) - 48);
	if (c->login_timeout_s == 0)
		return gw_errf(err, errlen, -EINVAL, "login_timeout_s: must be at least 1");
	if (c->nop_interval_s && c->nop_timeout_s == 0)
		return gw_errf(err, errlen, -EINVAL, "nop_timeout_s: must be at least 1");
	rc = check_chap(err, errlen, "discovery_chap", &c->discovery_chap);
	if (rc)
		return rc;
	rc = validate_portals(c, err, errlen);
	if (rc)
		return rc;
	rc = validate_alua(c, err, errlen);
	if (rc)
		return rc;
	for (size_t ti = 0; ti < c->ntargets; ti++) {
		rc = validate_target(c, ti, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}
