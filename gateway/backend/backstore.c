/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The backstore registry: which type of backstore opens a LUN's path,
 * chosen by the path's URL scheme (iscsi://...), with the file backstore for
 * paths that carry no registered scheme; and the built-in entries, which
 * turn a LUN's configuration into each backstore's open parameters.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "common/reactor.h"
#include "config/config.h"

#define BACKSTORES_MAX 8

static _Thread_local uint64_t open_deadline_ms;

void bdev_open_deadline_set(uint64_t deadline_ms)
{
	open_deadline_ms = deadline_ms;
}

static int file_open_lun(const struct gw_lun_cfg *lc, char *err, size_t errlen, struct bdev **out)
{
	struct bdev_file_params p = {
		.path = lc->path, .create_size = lc->size, .block_size = lc->block_size,
		.readonly = lc->readonly, .err = err, .errlen = errlen,
	};

	return bdev_file_open(&p, out);
}

static int iscsi_open_lun(const struct gw_lun_cfg *lc, char *err, size_t errlen, struct bdev **out)
{
	struct bdev_iscsi_params p = {
		.url = lc->path, .initiator = lc->backend_initiator,
		.sessions = lc->backend_sessions, .read_chunk = (uint32_t)lc->backend_read_chunk,
		.hold_ms = lc->backend_hold_s * 1000u,
		.cmd_timeout_s = lc->backend_timeout_s, .size_bytes = lc->size,
		.block_size = lc->size ? lc->block_size : 0, .readonly = lc->readonly,
	};

	if (open_deadline_ms) {
		uint64_t now = gw_now_ms();
		uint64_t left = open_deadline_ms > now ? open_deadline_ms - now : 0;

		p.open_bounded = true;
		p.open_timeout_ms = left > 5000 ? 5000 : (uint32_t)left;
	}
	(void)err;
	(void)errlen;
	return bdev_iscsi_open(&p, out);
}

static const struct bdev_backstore file_backstore = {
	.scheme = BDEV_SCHEME_FILE, .open = file_open_lun,
};
static const struct bdev_backstore iscsi_backstore = {
	.scheme = "iscsi", .open = iscsi_open_lun, .fence = bdev_iscsi_fence,
};

static const struct bdev_backstore *backstores[BACKSTORES_MAX] = {
	&file_backstore, &iscsi_backstore,
};

int bdev_backstore_register(const struct bdev_backstore *bs)
{
	size_t i;

	for (i = 0; i < BACKSTORES_MAX && backstores[i]; i++)
		if (strcmp(backstores[i]->scheme, bs->scheme) == 0)
			return -EEXIST;
	if (i == BACKSTORES_MAX)
		return -ENOSPC;
	backstores[i] = bs;
	return 0;
}

const struct bdev_backstore *bdev_backstore_for(const char *path)
{
	const struct bdev_backstore *dflt = NULL;
	const char *end = path ? strstr(path, "://") : NULL;

	for (size_t i = 0; i < BACKSTORES_MAX && backstores[i]; i++) {
		const struct bdev_backstore *bs = backstores[i];

		if (strcmp(bs->scheme, BDEV_SCHEME_FILE) == 0)
			dflt = bs;
		else if (end && strlen(bs->scheme) == (size_t)(end - path) &&
			 strncmp(path, bs->scheme, (size_t)(end - path)) == 0)
			return bs;
	}
	return dflt;
}

int bdev_open_lun(const struct gw_lun_cfg *lc, char *err, size_t errlen, struct bdev **out)
{
	const struct bdev_backstore *bs = bdev_backstore_for(lc->path);

	if (!bs) {
		if (err && errlen)
			snprintf(err, errlen, "no backstore opens %s", lc->path);
		return -EPROTONOSUPPORT;
	}
	return bs->open(lc, err, errlen, out);
}

int bdev_fence(struct bdev *b, const uint64_t *keys, size_t n, uint32_t timeout_ms)
{
	const struct bdev_backstore *bs = bdev_backstore_for(b->name);

	return bs && bs->fence ? bs->fence(b, keys, n, timeout_ms) : -EOPNOTSUPP;
}

bool bdev_fenceable(const struct bdev *b)
{
	const struct bdev_backstore *bs = bdev_backstore_for(b->name);

	return bs && bs->fence;
}
