/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The validators' context (names.h: gw_vctx): the key path a check is at
 * and its one-line message. isergwd's parser (config.c) and the agent's
 * cluster document checks (ha/doc*.c) both speak through it.
 */
#include "config/names.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/log.h"

static size_t vpath_add(struct gw_vctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void gw_vpath_pop(struct gw_vctx *c, size_t len)
{
	c->plen = len < sizeof(c->path) ? len : sizeof(c->path) - 1;
	c->path[c->plen] = '\0';
}

static size_t vpath_add(struct gw_vctx *c, const char *fmt, ...)
{
	size_t old = c->plen;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(c->path + old, sizeof(c->path) - old, fmt, ap);
	va_end(ap);
	gw_vpath_pop(c, old + (n > 0 ? (size_t)n : 0));
	return old;
}

void gw_vctx_init(struct gw_vctx *c, char *err, size_t errlen, const char *base)
{
	c->err = err;
	c->errlen = errlen;
	c->plen = 0;
	vpath_add(c, "%s", base ? base : "");
	if (err && errlen)
		err[0] = '\0';
}

size_t gw_vpath_key(struct gw_vctx *c, const char *key)
{
	return vpath_add(c, "%s%s", c->plen ? "." : "", key);
}

size_t gw_vpath_index(struct gw_vctx *c, size_t i)
{
	return vpath_add(c, "[%zu]", i);
}

int gw_verr(struct gw_vctx *c, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return gw_errf(c->err, c->errlen, -EINVAL, "%s: %s", c->plen ? c->path : "config", msg);
}
