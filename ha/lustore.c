/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's LU table on disk (STATE_DIR/lu-state.pb, a packed
 * isergw.ha.LuStore): written whole (a temporary file, fsync, rename) every
 * time it changes, before this node answers anything about the change, so
 * that a whole-cluster restart keeps the APTPL registrations. PR changes
 * are rare and the table small; the write runs in the agent's loop.
 *
 * Loading is the LU's power on (SPC-4 5.13.2): a state without APTPL is
 * dropped, an APTPL one is kept as stored. A node that joins a running
 * cluster then takes the newer versions at the barrier.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "isergw_ctl.pb-c.h"
#include "common/fsutil.h"
#include "common/log.h"

#define COMP "ha-lu"
#define LU_FILE "lu-state.pb"
#define LU_FILE_MAX (64u << 20)

int ha_lu_save(const struct ha_sm *sm, const char *dir)
{
	Isergw__Ha__LuStore st = ISERGW__HA__LU_STORE__INIT;
	Isergw__Ha__LuBlob *b = calloc(sm->lus.n + 1, sizeof(*b));
	Isergw__Ha__LuBlob **bp = calloc(sm->lus.n + 1, sizeof(*bp));
	Isergw__Ha__LuParked *pk = calloc(sm->lus.nparked + 1, sizeof(*pk));
	Isergw__Ha__LuParked **pkp = calloc(sm->lus.nparked + 1, sizeof(*pkp));
	size_t npk = 0;
	char path[PATH_MAX], tmp[PATH_MAX];
	uint8_t *buf = NULL;
	size_t len;
	int fd = -1, rc = 0;

	if (!b || !bp || !pk || !pkp) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < sm->lus.n; i++) {
		isergw__ha__lu_blob__init(&b[i]);
		b[i].naa.data = sm->lus.v[i].naa;
		b[i].naa.len = 16;
		b[i].version = sm->lus.v[i].version;
		b[i].state.data = sm->lus.v[i].state;
		b[i].state.len = sm->lus.v[i].len;
		b[i].handed = sm->lus.v[i].handed;
		bp[i] = &b[i];
	}
	st.lu_states = bp;
	st.n_lu_states = sm->lus.n;
	/* this node's own parked UAs: the others' come back from the members */
	for (size_t i = 0; i < sm->lus.nparked; i++) {
		struct ha_lu_parked *e = &sm->lus.parked[i];

		if (strcmp(e->node, sm->name))
			continue;
		ha_lu_parked_to_pb(e, &pk[npk]);
		pkp[npk] = &pk[npk];
		npk++;
	}
	st.lu_parked = pkp;
	st.n_lu_parked = npk;
	len = isergw__ha__lu_store__get_packed_size(&st);
	buf = malloc(len + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	isergw__ha__lu_store__pack(&st, buf);
	snprintf(path, sizeof(path), "%s/%s", dir, LU_FILE);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, LU_FILE);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = gw_write_all(fd, buf, len);
	if (rc)
		goto out;
	if (fsync(fd) < 0) {
		rc = -errno;
		goto out;
	}
	close(fd);
	fd = -1;
	if (rename(tmp, path) < 0)
		rc = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (rc)
		GW_ERR(COMP, "cannot store the LU table in %s: %s", dir, strerror(-rc));
	free(buf);
	free(b);
	free(bp);
	free(pk);
	free(pkp);
	return rc;
}

/*
 * Power on: the state that survives it (NULL when nothing does). An APTPL
 * state is kept as it was stored, so that every member that loaded it holds
 * the same bytes for the same version.
 */
static uint8_t *power_on(const uint8_t *state, size_t len, size_t *out_len)
{
	Isergw__Ctl__LuState *s = isergw__ctl__lu_state__unpack(NULL, len, state);
	uint8_t *buf = NULL;

	if (!s)
		return NULL;
	if (s->aptpl) {
		buf = malloc(len + 1);
		if (buf) {
			memcpy(buf, state, len);
			*out_len = len;
		}
	}
	isergw__ctl__lu_state__free_unpacked(s, NULL);
	return buf;
}

int ha_lu_load(struct ha_sm *sm, const char *dir)
{
	char path[PATH_MAX];
	struct stat sb;
	uint8_t *buf;
	ssize_t r;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%s", dir, LU_FILE);
	fd = gw_open_regular(path, O_RDONLY, &sb);
	if (fd == -GW_ENOTREG) {
		GW_ERR(COMP, "%s: %s, not a regular file: ignored", path, gw_file_kind(&sb));
		return -EINVAL;
	}
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	if (sb.st_size == 0) {
		/* an empty table packs to no bytes: no LU state, nothing parked */
		close(fd);
		GW_DEBUG(COMP, "%s: empty: no LU state stored", path);
		return 0;
	}
	if ((uint64_t)sb.st_size > LU_FILE_MAX) {
		close(fd);
		GW_ERR(COMP, "%s: too large or unreadable: ignored", path);
		return -EINVAL;
	}
	buf = malloc((size_t)sb.st_size);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	r = read(fd, buf, (size_t)sb.st_size);
	close(fd);
	rc = r == sb.st_size ? ha_lu_load_buf(sm, path, buf, (size_t)r) : -EINVAL;
	if (r != sb.st_size)
		GW_ERR(COMP, "%s: not an LU table: ignored (the cluster's members give it back)",
		       path);
	free(buf);
	return rc;
}

int ha_lu_load_buf(struct ha_sm *sm, const char *path, const uint8_t *buf, size_t len)
{
	Isergw__Ha__LuStore *st = isergw__ha__lu_store__unpack(NULL, len, buf);
	struct ha_lu *v;
	struct ha_lu_parked *pk;
	size_t n = 0, kept = 0, npk = 0;

	if (!st) {
		GW_ERR(COMP, "%s: not an LU table: ignored (the cluster's members give it back)",
		       path);
		return -EINVAL;
	}
	v = calloc(st->n_lu_states + 1, sizeof(*v));
	for (size_t i = 0; v && i < st->n_lu_states; i++) {
		const Isergw__Ha__LuBlob *b = st->lu_states[i];
		size_t slen = 0;
		uint8_t *keep;

		if (b->naa.len != 16 || !b->version)
			continue;
		n++;
		keep = power_on(b->state.data, b->state.len, &slen);
		if (!keep)
			continue;
		memcpy(v[kept].naa, b->naa.data, 16);
		v[kept].version = b->version;
		v[kept].handed = b->handed;
		v[kept].state = keep;
		v[kept].len = slen;
		kept++;
	}
	pk = calloc(st->n_lu_parked + 1, sizeof(*pk));
	for (size_t i = 0; pk && i < st->n_lu_parked; i++)
		if (!ha_lu_parked_from_pb(st->lu_parked[i], &pk[npk]) &&
		    !strcmp(pk[npk].node, sm->name))
			npk++;
	isergw__ha__lu_store__free_unpacked(st, NULL);
	if (!v || !pk) {
		free(v);
		free(pk);
		return -ENOMEM;
	}
	GW_NOTICE(COMP, "%s: %zu LU state(s), %zu with APTPL kept (power on); %zu unit "
		  "attention(s) for this node's isergwd", path, n, kept, npk);
	ha_sm_lu_load(sm, v, kept);
	ha_sm_lu_load_parked(sm, pk, npk);
	free(pk);
	return 0;
}
