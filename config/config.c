/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's configuration (docs/configuration.md).
 *
 * Parsing is strict and table driven: every JSON object is checked against a
 * table of known keys, so an unknown key, a wrong type or an out-of-range
 * number fails the load with a message naming its key path
 * ("targets[0].luns[1].colour: unknown key"). Cross-field rules live in
 * gw_config_validate(), derived defaults (LUN serial and NAA) in
 * gw_config_finalize(). gw_config_load_*() run all three.
 */
#include "config/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "config/names.h"

#define CFG_COMP "config"

#define CFG_FILE_MAX      (16u << 20) /* a configuration file larger than this is a mistake */
#define CFG_PATH_MAX      512         /* longest key path reported in a message */
#define CFG_REACTORS_MAX  1024u
#define CFG_TIMEOUT_MAX   3600u
#define CFG_LUN_MAX       16384u      /* LUNs 0..16383: flat / peripheral addressing */
#define CFG_DSL_MIN       512u
#define CFG_DSL_MAX       16777215u   /* 2^24 - 1, RFC 7143 */
#define CFG_QDEPTH_MAX    4096u
#define CFG_SECRET_WARN   12u         /* RFC 7143 9.2.1: at least 96 bits */

/*
 * IEEE company ID put in default NAA type 6 designators. 0x1A5E4A has the
 * low nibble of its first octet = 1010b, the "local" (X) bit set as in all
 * IEEE CIDs, and is not registered to anyone: designators made with it are
 * unique only within one isergw deployment (they are derived from the target
 * IQN, which is unique). Operators owning an OUI set "naa" explicitly.
 */
#define GW_NAA_DEFAULT_CID 0x1A5E4Au

/* ------------------------------------------------------------------------ */
/* small helpers                                                            */

static int str_copy(char *dst, size_t dstsz, const char *src)
{
	size_t n = strlen(src);

	if (n >= dstsz)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

/* NUL-terminated within its buffer? (code-built configs) */
static bool str_terminated(const char *s, size_t sz)
{
	return memchr(s, '\0', sz) != NULL;
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static int hex_val(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hex_val(s[i]) < 0)
			return false;
	return true;
}

/* Printable ASCII only (SCSI INQUIRY/VPD strings). */
static bool printable_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* ------------------------------------------------------------------------ */
/* checked conversions                                                      */

int gw_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s || !out)
		return -EINVAL;
	for (; *s; s++) {
		unsigned int d;

		if (!is_digit(*s))
			return -EINVAL;
		d = (unsigned int)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int gw_parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;
	int rc = gw_parse_u64(s, &v);

	if (rc)
		return rc;
	if (v > UINT32_MAX)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

int gw_opt_str(const char *prog, char *dst, size_t len, const char *v, const char *what)
{
	if (!v[0] || strlen(v) >= len) {
		GW_CFGERR("%s: %s: must be 1..%zu bytes", prog, what, len - 1);
		return -EINVAL;
	}
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

int gw_opt_u32(const char *prog, uint32_t *dst, const char *v, uint32_t min, uint32_t max,
	       const char *what)
{
	uint32_t x;

	if (gw_parse_u32(v, &x) || x < min || x > max) {
		GW_CFGERR("%s: %s: '%s' is not %u..%u", prog, what, v, min, max);
		return -EINVAL;
	}
	*dst = x;
	return 0;
}

void gw_opt_refused(const char *prog, char *const *argv, int optind_now, int opt)
{
	if (opt > 0 && opt < 256 && opt != '?' && opt != ':')
		GW_CFGERR("%s: -%c: unknown option or missing argument (%s --help lists them)",
			  prog, opt, prog);
	else
		GW_CFGERR("%s: %s: unknown option or missing argument (%s --help lists them)",
			  prog, argv[optind_now - 1], prog);
}

int gw_parse_size(const char *s, uint64_t *out)
{
	char digits[32];
	size_t n;
	unsigned int shift = 0;
	uint64_t v;
	int rc;

	if (!s || !out)
		return -EINVAL;
	n = strlen(s);
	if (n == 0)
		return -EINVAL;
	switch (s[n - 1]) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: break;
	}
	if (shift)
		n--;
	if (n == 0 || n >= sizeof(digits))
		return n == 0 ? -EINVAL : -ERANGE;
	memcpy(digits, s, n);
	digits[n] = '\0';
	rc = gw_parse_u64(digits, &v);
	if (rc)
		return rc;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* portals                                                                  */

/* Host name: labels of [A-Za-z0-9-], not all-numeric at the end. */
static bool valid_hostname(const char *h)
{
	const char *label = h;
	bool numeric = true;

	if (!*h)
		return false;
	for (const char *p = h;; p++) {
		if (*p == '.' || *p == '\0') {
			size_t len = (size_t)(p - label);

			if (len == 0 || len > 63 || label[0] == '-' || p[-1] == '-')
				return false;
			if (*p == '\0')
				break;
			label = p + 1;
			numeric = true;
			continue;
		}
		if (!is_digit(*p))
			numeric = false;
		if (!(is_digit(*p) || *p == '-' || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return false;
	}
	return !numeric; /* "999.1.1.1" is a broken address, not a name */
}

/* IPv6 literal, optionally with a zone ("fe80::1%eth0"). */
static bool valid_ipv6(const char *a)
{
	char buf[64];
	const char *pct = strchr(a, '%');
	size_t n = pct ? (size_t)(pct - a) : strlen(a);
	struct in6_addr in6;

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, a, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET6, buf, &in6) != 1)
		return false;
	if (pct) {
		const char *z = pct + 1;

		if (!*z)
			return false;
		for (; *z; z++)
			if (!(is_digit(*z) || (*z >= 'a' && *z <= 'z') || (*z >= 'A' && *z <= 'Z') ||
			      *z == '_' || *z == '-' || *z == '.'))
				return false;
	}
	return true;
}

int gw_portal_parse(const char *url, struct gw_portal_cfg *out)
{
	struct gw_portal_cfg p;
	const char *s, *host, *host_end, *port_s = NULL;
	struct in_addr in4;
	bool v6 = false;
	size_t hlen;

	if (!url || !out)
		return -EINVAL;
	gw_portal_defaults(&p);
	s = url;
	if (strncmp(s, "tcp://", 6) == 0) {
		p.transport = GW_TRANSPORT_TCP;
		s += 6;
	} else if (strncmp(s, "iser://", 7) == 0) {
		p.transport = GW_TRANSPORT_ISER;
		s += 7;
	} else if (strstr(s, "://")) {
		return -EINVAL; /* unknown scheme */
	}

	if (*s == '[') {
		host = s + 1;
		host_end = strchr(host, ']');
		if (!host_end)
			return -EINVAL;
		if (host_end[1] == ':')
			port_s = host_end + 2;
		else if (host_end[1] != '\0')
			return -EINVAL;
		v6 = true;
	} else {
		const char *colon = strchr(s, ':');

		host = s;
		if (colon && strchr(colon + 1, ':')) {
			host_end = s + strlen(s); /* bare IPv6 literal, default port */
			v6 = true;
		} else if (colon) {
			host_end = colon;
			port_s = colon + 1;
		} else {
			host_end = s + strlen(s);
		}
	}

	hlen = (size_t)(host_end - host);
	if (hlen == 0 || hlen >= sizeof(p.addr))
		return -EINVAL;
	memcpy(p.addr, host, hlen);
	p.addr[hlen] = '\0';
	if (v6) {
		if (!valid_ipv6(p.addr))
			return -EINVAL;
	} else if (inet_pton(AF_INET, p.addr, &in4) != 1 && !valid_hostname(p.addr)) {
		return -EINVAL;
	}

	if (port_s) {
		uint32_t port;

		if (gw_parse_u32(port_s, &port) || port == 0 || port > 65535)
			return -EINVAL;
		p.port = (uint16_t)port;
	}
	*out = p;
	return 0;
}

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
	(void)str_copy(l->vendor, sizeof(l->vendor), "ISERGW");
	(void)str_copy(l->product, sizeof(l->product), "isergw disk");
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
	(void)str_copy(c->log_level, sizeof(c->log_level), "notice");
	(void)str_copy(c->state_dir, sizeof(c->state_dir), "/var/lib/isergw");
	(void)str_copy(c->ctl_socket, sizeof(c->ctl_socket), "/run/isergw/isergwd.sock");
	c->nop_interval_s = 5;
	c->nop_timeout_s = 30;
	c->login_timeout_s = 15;
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
/* JSON parsing                                                             */

struct pctx {
	char *err;
	size_t errlen;
	char path[CFG_PATH_MAX];
	size_t plen;
};

static void path_set_len(struct pctx *c, size_t len)
{
	c->plen = len < sizeof(c->path) ? len : sizeof(c->path) - 1;
	c->path[c->plen] = '\0';
}

/* Appends ".key" (or "key" at the root); returns the length to pop back to. */
static size_t path_key(struct pctx *c, const char *key)
{
	size_t old = c->plen;
	int n = snprintf(c->path + old, sizeof(c->path) - old, "%s%s", old ? "." : "", key);

	path_set_len(c, old + (n > 0 ? (size_t)n : 0));
	return old;
}

static size_t path_index(struct pctx *c, size_t i)
{
	size_t old = c->plen;
	int n = snprintf(c->path + old, sizeof(c->path) - old, "[%zu]", i);

	path_set_len(c, old + (n > 0 ? (size_t)n : 0));
	return old;
}

__attribute__((format(printf, 2, 3)))
static int perr(struct pctx *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return gw_errf(c->err, c->errlen, -EINVAL, "%s: %s", c->plen ? c->path : "config", msg);
}

static const char *jtype(const struct json_object *v)
{
	return json_type_to_name(json_object_get_type(v));
}

enum fkind {
	FK_UINT,        /* JSON integer into a uint16/32 or unsigned int, [min, max] */
	FK_BOOL,
	FK_STR,         /* into a char[size]; min = 1: must not be empty */
	FK_SIZE,        /* integer or "1G"-style string into a uint64_t */
	FK_OBJ,         /* nested object described by sub */
	FK_CUSTOM,      /* fn(ctx, value, base) */
};

struct ftable;

struct field {
	const char *key;
	enum fkind kind;
	size_t off;
	size_t size;
	uint64_t min, max;
	bool required;
	const struct ftable *sub;
	int (*fn)(struct pctx *c, struct json_object *v, void *base);
};

struct ftable {
	const struct field *f;
	size_t n;
};

#define FSIZE(T, m) sizeof(((T *)0)->m)
#define F_UINT(T, m, lo, hi) { #m, FK_UINT, offsetof(T, m), FSIZE(T, m), lo, hi, false, NULL, NULL }
#define F_BOOL(T, m)         { #m, FK_BOOL, offsetof(T, m), FSIZE(T, m), 0, 0, false, NULL, NULL }
#define F_STR(T, m, nonempty, req) \
	{ #m, FK_STR, offsetof(T, m), FSIZE(T, m), nonempty, 0, req, NULL, NULL }
#define F_SIZE(T, m)         { #m, FK_SIZE, offsetof(T, m), FSIZE(T, m), 0, INT64_MAX, false, NULL, NULL }
#define F_OBJ(T, m, tbl)     { #m, FK_OBJ, offsetof(T, m), FSIZE(T, m), 0, 0, false, &(tbl), NULL }
#define F_FN(key, f, req)    { key, FK_CUSTOM, 0, 0, 0, 0, req, NULL, f }
#define TABLE(arr)           { arr, sizeof(arr) / sizeof(arr[0]) }

#define FIELDS_MAX 32

static int parse_object(struct pctx *c, struct json_object *obj, const struct ftable *t, void *base);

static int store_uint(void *dst, size_t size, uint64_t v)
{
	switch (size) {
	case sizeof(uint16_t): {
		uint16_t x = (uint16_t)v;

		memcpy(dst, &x, sizeof(x));
		return 0;
	}
	case sizeof(uint32_t): {
		uint32_t x = (uint32_t)v;

		memcpy(dst, &x, sizeof(x));
		return 0;
	}
	case sizeof(uint64_t):
		memcpy(dst, &v, sizeof(v));
		return 0;
	default:
		return -EINVAL;
	}
}

static int parse_field(struct pctx *c, const struct field *f, struct json_object *v, void *base)
{
	char *dst = (char *)base + f->off;

	switch (f->kind) {
	case FK_UINT: {
		int64_t x;

		if (!json_object_is_type(v, json_type_int))
			return perr(c, "expected an integer, got %s", jtype(v));
		x = json_object_get_int64(v);
		if (x < 0 || (uint64_t)x < f->min || (uint64_t)x > f->max)
			return perr(c, "%s out of range (%llu..%llu)", json_object_get_string(v),
				    (unsigned long long)f->min, (unsigned long long)f->max);
		return store_uint(dst, f->size, (uint64_t)x);
	}
	case FK_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return perr(c, "expected true or false, got %s", jtype(v));
		*(bool *)(void *)dst = json_object_get_boolean(v);
		return 0;
	case FK_STR: {
		const char *s;
		size_t len;

		if (!json_object_is_type(v, json_type_string))
			return perr(c, "expected a string, got %s", jtype(v));
		s = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
		if (strlen(s) != len)
			return perr(c, "contains a NUL character");
		if (len >= f->size)
			return perr(c, "too long (%zu bytes, max %zu)", len, f->size - 1);
		if (f->min && len == 0)
			return perr(c, "must not be empty");
		memcpy(dst, s, len + 1);
		return 0;
	}
	case FK_SIZE: {
		uint64_t x;

		if (json_object_is_type(v, json_type_int)) {
			if (json_object_get_int64(v) < 0)
				return perr(c, "must not be negative");
			x = json_object_get_uint64(v);
		} else if (json_object_is_type(v, json_type_string)) {
			int rc = gw_parse_size(json_object_get_string(v), &x);

			if (rc == -ERANGE)
				return perr(c, "\"%s\" is too large", json_object_get_string(v));
			if (rc)
				return perr(c, "\"%s\" is not a size (digits with an optional K, M, G or T suffix)",
					    json_object_get_string(v));
		} else {
			return perr(c, "expected an integer or a size string, got %s", jtype(v));
		}
		if (x > f->max)
			return perr(c, "too large (max %llu)", (unsigned long long)f->max);
		return store_uint(dst, f->size, x);
	}
	case FK_OBJ:
		return parse_object(c, v, f->sub, dst);
	case FK_CUSTOM:
		return f->fn(c, v, base);
	}
	return perr(c, "internal error: bad field kind");
}

static int parse_object(struct pctx *c, struct json_object *obj, const struct ftable *t, void *base)
{
	struct json_object_iterator it, end;
	bool seen[FIELDS_MAX] = { false };
	int rc;

	if (!json_object_is_type(obj, json_type_object))
		return perr(c, "expected an object, got %s", jtype(obj));
	it = json_object_iter_begin(obj);
	end = json_object_iter_end(obj);
	for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
		const char *key = json_object_iter_peek_name(&it);
		struct json_object *v = json_object_iter_peek_value(&it);
		size_t i, old;

		for (i = 0; i < t->n; i++)
			if (strcmp(t->f[i].key, key) == 0)
				break;
		old = path_key(c, key);
		if (i == t->n)
			return perr(c, "unknown key");
		rc = parse_field(c, &t->f[i], v, base);
		if (rc)
			return rc;
		path_set_len(c, old);
		seen[i] = true;
	}
	for (size_t i = 0; i < t->n; i++) {
		if (t->f[i].required && !seen[i]) {
			path_key(c, t->f[i].key);
			return perr(c, "missing");
		}
	}
	return 0;
}

/* Parses an array of objects into a freshly allocated array of elsz-sized elements. */
static int parse_array(struct pctx *c, struct json_object *v, size_t elsz, void **arr, size_t *n,
		       void (*init)(void *el, size_t idx), const struct ftable *t)
{
	size_t len;
	char *a;

	if (!json_object_is_type(v, json_type_array))
		return perr(c, "expected an array, got %s", jtype(v));
	if (*arr)
		return perr(c, "given twice");
	len = json_object_array_length(v);
	if (len == 0)
		return 0;
	a = calloc(len, elsz);
	if (!a)
		return gw_errf(c->err, c->errlen, -EINVAL, "out of memory"), -ENOMEM;
	*arr = a;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		size_t old = path_index(c, i);
		int rc;

		init(a + i * elsz, i);
		rc = parse_object(c, json_object_array_get_idx(v, i), t, a + i * elsz);
		if (rc)
			return rc;
		path_set_len(c, old);
	}
	return 0;
}

static int parse_log_level(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;
	enum gw_log_level lvl;
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return perr(c, "expected a string, got %s", jtype(v));
	s = json_object_get_string(v);
	if (gw_log_parse_level(s, &lvl) || str_copy(cfg->log_level, sizeof(cfg->log_level), s))
		return perr(c, "\"%s\" is not one of err, warn, notice, info, debug", s);
	return 0;
}

/* A string that is one of two words: *out is false for `no`, true for `yes`. */
static int parse_two_words(struct pctx *c, struct json_object *v, const char *no,
			   const char *yes, bool *out)
{
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return perr(c, "expected a string, got %s", jtype(v));
	s = json_object_get_string(v);
	if (strcmp(s, no) == 0)
		*out = false;
	else if (strcmp(s, yes) == 0)
		*out = true;
	else
		return perr(c, "\"%s\" is not one of %s, %s", s, no, yes);
	return 0;
}

static int parse_alua_policy(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;

	return parse_two_words(c, v, "local", "external", &cfg->alua_policy_external);
}

static int parse_lu_state(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;

	return parse_two_words(c, v, "local", "cluster", &cfg->lu_state_cluster);
}

uint64_t gw_backend_pr_key(uint16_t tpg_id)
{
	return GW_PR_KEY_BASE | tpg_id;
}

int gw_parse_pr_key(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t n;

	if (!s || (strncmp(s, "0x", 2) != 0 && strncmp(s, "0X", 2) != 0))
		return -EINVAL;
	s += 2;
	n = strlen(s);
	if (n == 0 || n > 16 || !all_hex(s, n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		v = v << 4 | (uint64_t)hex_val(s[i]);
	if (v == 0)
		return -EINVAL;
	*out = v;
	return 0;
}

static bool fence_listed(const struct gw_config *c, uint64_t key)
{
	if (!c || !c->backend_fencing || !c->backend_pr_key)
		return false;
	for (size_t i = 0; i < c->nbackend_pr_fence; i++)
		if (c->backend_pr_fence[i] == key)
			return true;
	return false;
}

size_t gw_config_fence_new(const struct gw_config *old, const struct gw_config *ncfg,
			   uint64_t *out)
{
	size_t n = 0;

	if (!ncfg || !ncfg->backend_fencing || !ncfg->backend_pr_key)
		return 0;
	for (size_t i = 0; i < ncfg->nbackend_pr_fence && i < GW_PR_FENCE_MAX; i++)
		if (!fence_listed(old, ncfg->backend_pr_fence[i]))
			out[n++] = ncfg->backend_pr_fence[i];
	return n;
}

static int parse_backend_fencing(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return perr(c, "expected a string, got %s", jtype(v));
	s = json_object_get_string(v);
	if (strcmp(s, "reservation") == 0)
		cfg->backend_fencing = true;
	else if (strcmp(s, "none") == 0)
		cfg->backend_fencing = false;
	else
		return perr(c, "\"%s\" is not one of reservation, none", s);
	return 0;
}

static int pr_key_of(struct pctx *c, struct json_object *v, uint64_t *out)
{
	if (!json_object_is_type(v, json_type_string))
		return perr(c, "expected a string, got %s", jtype(v));
	if (gw_parse_pr_key(json_object_get_string(v), out))
		return perr(c, "\"%s\" is not a reservation key (0x and 1..16 hex digits, not zero)",
			    json_object_get_string(v));
	return 0;
}

static int parse_backend_pr_key(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;

	return pr_key_of(c, v, &cfg->backend_pr_key);
}

/* "backend_pr_fence": ["0x...", ...] */
static int parse_backend_pr_fence(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;
	size_t len;

	if (!json_object_is_type(v, json_type_array))
		return perr(c, "expected an array, got %s", jtype(v));
	len = json_object_array_length(v);
	if (len > GW_PR_FENCE_MAX)
		return perr(c, "%zu keys (at most %u)", len, GW_PR_FENCE_MAX);
	for (size_t i = 0; i < len; i++) {
		size_t old = path_index(c, i);
		int rc = pr_key_of(c, json_object_array_get_idx(v, i), &cfg->backend_pr_fence[i]);

		if (rc)
			return rc;
		path_set_len(c, old);
	}
	cfg->nbackend_pr_fence = len;
	return 0;
}

static int parse_portal_url(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_portal_cfg *p = base, parsed;
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return perr(c, "expected a string, got %s", jtype(v));
	s = json_object_get_string(v);
	if (gw_portal_parse(s, &parsed))
		return perr(c, "\"%s\" is not a portal (tcp://ADDR[:PORT] or iser://ADDR[:PORT])", s);
	p->transport = parsed.transport;
	memcpy(p->addr, parsed.addr, sizeof(p->addr));
	p->port = parsed.port;
	return 0;
}

/* "6..." 32 hex digits (NAA IEEE Registered Extended), optional "naa." prefix. */
static int parse_naa_string(const char *s, uint8_t naa[16])
{
	if (strncasecmp(s, "naa.", 4) == 0)
		s += 4;
	if (strlen(s) != 32 || !all_hex(s, 32) || s[0] != '6')
		return -EINVAL;
	for (size_t i = 0; i < 16; i++)
		naa[i] = (uint8_t)(hex_val(s[2 * i]) << 4 | hex_val(s[2 * i + 1]));
	return 0;
}

static int parse_lun_naa(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_lun_cfg *l = base;

	if (!json_object_is_type(v, json_type_string))
		return perr(c, "expected a string, got %s", jtype(v));
	if (parse_naa_string(json_object_get_string(v), l->naa))
		return perr(c, "\"%s\" is not an NAA type 6 designator (32 hex digits starting with 6)",
			    json_object_get_string(v));
	l->naa_set = true;
	return 0;
}

static const struct field chap_fields[] = {
	F_STR(struct gw_chap_cfg, user, 0, false),
	F_STR(struct gw_chap_cfg, secret, 0, false),
};
static const struct ftable chap_table = TABLE(chap_fields);

static const struct field portal_fields[] = {
	F_FN("url", parse_portal_url, true),
	F_UINT(struct gw_portal_cfg, tpgt, 1, 65535),
	F_UINT(struct gw_portal_cfg, rel_port_id, 1, 65535),
	F_UINT(struct gw_portal_cfg, tpg_id, 1, 65535),
};
static const struct ftable portal_table = TABLE(portal_fields);

static const struct field lun_fields[] = {
	F_UINT(struct gw_lun_cfg, lun, 0, UINT32_MAX),
	F_STR(struct gw_lun_cfg, path, 1, true),
	F_SIZE(struct gw_lun_cfg, size),
	F_UINT(struct gw_lun_cfg, block_size, 0, UINT32_MAX),
	F_STR(struct gw_lun_cfg, serial, 1, false),
	F_FN("naa", parse_lun_naa, false),
	F_BOOL(struct gw_lun_cfg, readonly),
	F_BOOL(struct gw_lun_cfg, write_cache),
	F_BOOL(struct gw_lun_cfg, thin),
	F_STR(struct gw_lun_cfg, vendor, 1, false),
	F_STR(struct gw_lun_cfg, product, 1, false),
	F_SIZE(struct gw_lun_cfg, max_transfer),
	F_UINT(struct gw_lun_cfg, backend_sessions, 1, 64),
	F_UINT(struct gw_lun_cfg, backend_hold_s, 1, 3600),
	F_UINT(struct gw_lun_cfg, backend_timeout_s, 1, 3600),
	F_SIZE(struct gw_lun_cfg, backend_read_chunk),
	F_STR(struct gw_lun_cfg, backend_initiator, 1, false),
	F_STR(struct gw_lun_cfg, device_group, 1, false),
};
static const struct ftable lun_table = TABLE(lun_fields);

static const struct field acl_fields[] = {
	F_STR(struct gw_acl_cfg, initiator, 1, true),
	F_OBJ(struct gw_acl_cfg, chap, chap_table),
};
static const struct ftable acl_table = TABLE(acl_fields);

static void lun_init(void *el, size_t idx)
{
	gw_lun_defaults(el);
	((struct gw_lun_cfg *)el)->lun = (uint32_t)idx; /* overwritten by "lun" */
}

static void acl_init(void *el, size_t idx)
{
	memset(el, 0, sizeof(struct gw_acl_cfg));
}

static int parse_luns(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_target_cfg *t = base;
	void *arr = t->luns;
	int rc = parse_array(c, v, sizeof(*t->luns), &arr, &t->nluns, lun_init, &lun_table);

	t->luns = arr;
	return rc;
}

static int parse_acls(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_target_cfg *t = base;
	void *arr = t->acls;
	int rc = parse_array(c, v, sizeof(*t->acls), &arr, &t->nacls, acl_init, &acl_table);

	t->acls = arr;
	return rc;
}

static const struct field target_fields[] = {
	F_STR(struct gw_target_cfg, iqn, 1, true),
	F_STR(struct gw_target_cfg, alias, 0, false),
	F_OBJ(struct gw_target_cfg, chap, chap_table),
	F_OBJ(struct gw_target_cfg, mutual_chap, chap_table),
	F_FN("acls", parse_acls, false),
	F_UINT(struct gw_target_cfg, max_recv_dsl, 0, UINT32_MAX),
	F_UINT(struct gw_target_cfg, max_burst, CFG_DSL_MIN, CFG_DSL_MAX),
	F_UINT(struct gw_target_cfg, first_burst, CFG_DSL_MIN, CFG_DSL_MAX),
	F_UINT(struct gw_target_cfg, max_outstanding_r2t, 1, 65535),
	F_BOOL(struct gw_target_cfg, initial_r2t),
	F_BOOL(struct gw_target_cfg, immediate_data),
	F_UINT(struct gw_target_cfg, queue_depth, 1, CFG_QDEPTH_MAX),
	F_FN("luns", parse_luns, false),
};
static const struct ftable target_table = TABLE(target_fields);

static void portal_init(void *el, size_t idx)
{
	gw_portal_defaults(el);
	((struct gw_portal_cfg *)el)->rel_port_id = (uint16_t)(idx + 1);
}

static void target_init(void *el, size_t idx)
{
	gw_target_defaults(el);
}

static int parse_portals(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;
	void *arr = cfg->portals;
	int rc;

	if (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 65535)
		return perr(c, "too many portals (max 65535)");
	rc = parse_array(c, v, sizeof(*cfg->portals), &arr, &cfg->nportals, portal_init, &portal_table);
	cfg->portals = arr;
	return rc;
}

static int parse_targets(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;
	void *arr = cfg->targets;
	int rc = parse_array(c, v, sizeof(*cfg->targets), &arr, &cfg->ntargets, target_init,
			     &target_table);

	cfg->targets = arr;
	return rc;
}

/* "rel_port_ids": [1, 2, ...] */
static int parse_rel_port_ids(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_port_group_cfg *g = base;
	size_t len;

	if (!json_object_is_type(v, json_type_array))
		return perr(c, "expected an array, got %s", jtype(v));
	len = json_object_array_length(v);
	if (len == 0 || len > GW_PG_PORTS_MAX)
		return perr(c, "%zu ports (1..%u)", len, GW_PG_PORTS_MAX);
	for (size_t i = 0; i < len; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		int64_t x;

		if (!json_object_is_type(e, json_type_int))
			return perr(c, "[%zu]: expected an integer, got %s", i, jtype(e));
		x = json_object_get_int64(e);
		if (x < 1 || x > 65535)
			return perr(c, "[%zu]: %lld out of range (1..65535)", i, (long long)x);
		g->rel_port_ids[i] = (uint16_t)x;
	}
	g->nrel_port_ids = len;
	return 0;
}

static const struct field port_group_fields[] = {
	F_UINT(struct gw_port_group_cfg, tpg_id, 1, 65535),
	F_FN("rel_port_ids", parse_rel_port_ids, true),
};
static const struct ftable port_group_table = TABLE(port_group_fields);

static int parse_non_owner_state(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_device_group_cfg *d = base;
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return perr(c, "expected a string, got %s", jtype(v));
	s = json_object_get_string(v);
	if (strcmp(s, "active/non-optimized") == 0)
		d->non_owner_state = 1;
	else if (strcmp(s, "standby") == 0)
		d->non_owner_state = 2;
	else if (strcmp(s, "unavailable") == 0)
		d->non_owner_state = 3;
	else
		return perr(c, "\"%s\" is not one of active/non-optimized, standby, unavailable", s);
	return 0;
}

static const struct field device_group_fields[] = {
	F_STR(struct gw_device_group_cfg, name, 1, true),
	F_UINT(struct gw_device_group_cfg, owner_tpg_id, 0, 65535),
	F_FN("non_owner_state", parse_non_owner_state, false),
};
static const struct ftable device_group_table = TABLE(device_group_fields);

static void port_group_init(void *el, size_t idx)
{
	(void)idx;
	memset(el, 0, sizeof(struct gw_port_group_cfg));
}

static void device_group_init(void *el, size_t idx)
{
	(void)idx;
	memset(el, 0, sizeof(struct gw_device_group_cfg));
	((struct gw_device_group_cfg *)el)->non_owner_state = 1;
}

static int parse_port_groups(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;
	void *arr = cfg->port_groups;
	int rc;

	if (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 64)
		return perr(c, "too many target port groups (max 64)");
	rc = parse_array(c, v, sizeof(*cfg->port_groups), &arr, &cfg->nport_groups,
			 port_group_init, &port_group_table);
	cfg->port_groups = arr;
	return rc;
}

static int parse_device_groups(struct pctx *c, struct json_object *v, void *base)
{
	struct gw_config *cfg = base;
	void *arr = cfg->device_groups;
	int rc;

	if (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 256)
		return perr(c, "too many device groups (max 256)");
	rc = parse_array(c, v, sizeof(*cfg->device_groups), &arr, &cfg->ndevice_groups,
			 device_group_init, &device_group_table);
	cfg->device_groups = arr;
	return rc;
}

static const struct field config_fields[] = {
	F_UINT(struct gw_config, reactors, 0, CFG_REACTORS_MAX),
	F_FN("log_level", parse_log_level, false),
	F_STR(struct gw_config, state_dir, 1, false),
	F_STR(struct gw_config, ctl_socket, 1, false),
	F_STR(struct gw_config, shared_state_dir, 0, false),
	F_FN("port_groups", parse_port_groups, false),
	F_FN("device_groups", parse_device_groups, false),
	F_FN("alua_policy", parse_alua_policy, false),
	F_FN("lu_state", parse_lu_state, false),
	F_UINT(struct gw_config, alua_request_timeout_ms, 100, 600000),
	F_BOOL(struct gw_config, alua_lease),
	F_UINT(struct gw_config, alua_lease_unavailable_ms, 0, 600000),
	F_FN("backend_fencing", parse_backend_fencing, false),
	F_FN("backend_pr_key", parse_backend_pr_key, false),
	F_FN("backend_pr_fence", parse_backend_pr_fence, false),
	F_UINT(struct gw_config, nop_interval_s, 0, CFG_TIMEOUT_MAX),
	F_UINT(struct gw_config, nop_timeout_s, 1, CFG_TIMEOUT_MAX),
	F_UINT(struct gw_config, login_timeout_s, 1, CFG_TIMEOUT_MAX),
	F_OBJ(struct gw_config, discovery_chap, chap_table),
	F_FN("portals", parse_portals, false),
	F_FN("targets", parse_targets, false),
};
static const struct ftable config_table = TABLE(config_fields);

_Static_assert(sizeof(config_fields) / sizeof(config_fields[0]) <= FIELDS_MAX, "seen[] too small");
_Static_assert(sizeof(target_fields) / sizeof(target_fields[0]) <= FIELDS_MAX, "seen[] too small");
_Static_assert(sizeof(lun_fields) / sizeof(lun_fields[0]) <= FIELDS_MAX, "seen[] too small");

static void offset_to_line(const char *s, size_t off, unsigned int *line, unsigned int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && s[i]; i++) {
		if (s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

int gw_config_load_string(const char *json, struct gw_config **out, char *err, size_t errlen)
{
	return gw_config_load_string_base(json, NULL, out, err, errlen);
}

/* Every string of o valid UTF-8 without NUL (names.h), the key path from prefix in the message. */
static int strings_check(struct json_object *o, const char *prefix, char *err, size_t errlen)
{
	char path[CFG_PATH_MAX], why[64];

	if (!gw_json_strings_check(o, prefix, path, sizeof(path), why, sizeof(why)))
		return 0;
	return gw_errf(err, errlen, -EINVAL, "%s: %s", path[0] ? path : "config", why);
}

int gw_config_load_string_base(const char *json, const struct gw_config *base,
			       struct gw_config **out, char *err, size_t errlen)
{
	struct pctx ctx = { .err = err, .errlen = errlen };
	struct json_tokener *tok;
	struct json_object *root;
	struct gw_config *cfg;
	unsigned int line, col;
	size_t len, end;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!json || !out)
		return gw_errf(err, errlen, -EINVAL, "config: no input");
	*out = NULL;
	len = strlen(json);
	if (len > CFG_FILE_MAX)
		return gw_errf(err, errlen, -EINVAL, "config: larger than %u bytes", CFG_FILE_MAX);

	tok = json_tokener_new();
	if (!tok)
		return gw_errf(err, errlen, -EINVAL, "out of memory"), -ENOMEM;
	root = json_tokener_parse_ex(tok, json, (int)len);
	if (!root) {
		enum json_tokener_error jerr = json_tokener_get_error(tok);

		offset_to_line(json, json_tokener_get_parse_end(tok), &line, &col);
		rc = gw_errf(err, errlen, -EINVAL, "line %u column %u: %s", line, col,
			     jerr == json_tokener_continue ? "unexpected end of input"
							   : json_tokener_error_desc(jerr));
		goto err_free_tok;
	}
	end = json_tokener_get_parse_end(tok);
	for (size_t i = end; i < len; i++) {
		if (json[i] != ' ' && json[i] != '\t' && json[i] != '\n' && json[i] != '\r') {
			offset_to_line(json, i, &line, &col);
			rc = gw_errf(err, errlen, -EINVAL, "line %u column %u: trailing data after the configuration",
				     line, col);
			goto err_put_root;
		}
	}

	rc = strings_check(root, "", err, errlen);
	if (rc)
		goto err_put_root;

	cfg = malloc(sizeof(*cfg));
	if (!cfg) {
		gw_errf(err, errlen, -EINVAL, "out of memory");
		rc = -ENOMEM;
		goto err_put_root;
	}
	gw_config_defaults(cfg);
	if (base) {
		/* the base's top-level settings, none of its lists */
		*cfg = *base;
		cfg->portals = NULL;
		cfg->nportals = 0;
		cfg->targets = NULL;
		cfg->ntargets = 0;
		cfg->port_groups = NULL;
		cfg->nport_groups = 0;
		cfg->device_groups = NULL;
		cfg->ndevice_groups = 0;
	}
	rc = parse_object(&ctx, root, &config_table, cfg);
	if (rc)
		goto err_free_cfg;
	/* under a lease the HA agent pushes them: a node may start with none */
	if (cfg->nportals == 0 && !cfg->alua_lease) {
		rc = gw_errf(err, errlen, -EINVAL, "portals: at least one portal is required (unless alua_lease is true)");
		goto err_free_cfg;
	}
	if (cfg->ntargets == 0 && !cfg->alua_lease) {
		rc = gw_errf(err, errlen, -EINVAL, "targets: at least one target is required (unless alua_lease is true)");
		goto err_free_cfg;
	}
	rc = gw_config_validate(cfg, err, errlen);
	if (rc)
		goto err_free_cfg;
	gw_config_finalize(cfg);

	json_object_put(root);
	json_tokener_free(tok);
	*out = cfg;
	return 0;

err_free_cfg:
	gw_config_free(cfg);
err_put_root:
	json_object_put(root);
err_free_tok:
	json_tokener_free(tok);
	return rc;
}

int gw_config_load_file(const char *path, struct gw_config **out, char *err, size_t errlen)
{
	char ebuf[128];
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd, rc;

	if (!path || !out)
		return gw_errf(err, errlen, -EINVAL, "config: no file name");
	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		gw_errf(err, errlen, -EINVAL, "%s: %s", path, strerror_r(-rc, ebuf, sizeof(ebuf)));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		gw_errf(err, errlen, -EINVAL, "%s: %s", path, strerror_r(-rc, ebuf, sizeof(ebuf)));
		goto err_close;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = gw_errf(err, errlen, -EINVAL, "%s: not a regular file", path);
		goto err_close;
	}
	if ((uint64_t)st.st_size > CFG_FILE_MAX) {
		rc = gw_errf(err, errlen, -EINVAL, "%s: larger than %u bytes", path, CFG_FILE_MAX);
		goto err_close;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = -ENOMEM;
		gw_errf(err, errlen, -EINVAL, "%s: out of memory", path);
		goto err_close;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			gw_errf(err, errlen, -EINVAL, "%s: %s", path, strerror_r(-rc, ebuf, sizeof(ebuf)));
			goto err_free_buf;
		}
		if (n == 0)
			break; /* shrank under us: parse what is there */
		got += (size_t)n;
	}
	buf[got] = '\0';
	if (strlen(buf) != got) {
		rc = gw_errf(err, errlen, -EINVAL, "%s: contains a NUL byte", path);
		goto err_free_buf;
	}
	rc = gw_config_load_string(buf, out, err, errlen);
	if (rc && err && errlen) {
		/* prefix the file name: "FILE: targets[0].iqn: missing" */
		char tmp[512];

		snprintf(tmp, sizeof(tmp), "%s", err);
		gw_errf(err, errlen, -EINVAL, "%s: %s", path, tmp);
	}

err_free_buf:
	free(buf);
err_close:
	close(fd);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* validation                                                               */

/* A name of kind (names.h) at path: the shared check and its words. */
static int check_name(char *err, size_t errlen, const char *path, enum gw_name_kind kind,
		      const char *n, size_t sz)
{
	char msg[384];

	if (!str_terminated(n, sz))
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

	if (!str_terminated(ch->user, sizeof(ch->user)) || !str_terminated(ch->secret, sizeof(ch->secret)))
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
		if (!str_terminated(p->addr, sizeof(p->addr)) || !p->addr[0])
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

		if (!str_terminated(d->name, sizeof(d->name)) || !d->name[0] ||
		    !printable_ascii(d->name))
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

			if (!str_terminated(l->device_group, sizeof(l->device_group)) ||
			    !dg_known(c, l->device_group))
				return gw_errf(err, errlen, -EINVAL,
					       "targets[%zu].luns[%zu].device_group: \"%s\" is not in device_groups",
					       ti, li, l->device_group);
		}
	}
	return 0;
}

/* One LUN's own fields (not against the other LUNs). */
static int validate_lun_one(const struct gw_lun_cfg *l, size_t ti, size_t li, char *err,
			    size_t errlen)
{
	char path[96];
	int rc;

	if (l->lun >= CFG_LUN_MAX)
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].lun: %u out of range (0..%u)", ti,
			       li, l->lun, CFG_LUN_MAX - 1);
	if (!str_terminated(l->path, sizeof(l->path)) || !l->path[0])
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
	if (!str_terminated(l->serial, sizeof(l->serial)) || !printable_ascii(l->serial))
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].serial: printable ASCII only", ti, li);
	if (!str_terminated(l->vendor, sizeof(l->vendor)) || !printable_ascii(l->vendor))
		return gw_errf(err, errlen, -EINVAL, "targets[%zu].luns[%zu].vendor: printable ASCII only, max 8",
			       ti, li);
	if (!str_terminated(l->product, sizeof(l->product)) || !printable_ascii(l->product))
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
	int rc = validate_lun_one(l, ti, li, err, errlen);

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

static uint64_t fnv1a64(uint64_t h, const void *data, size_t len);
#define FNV64_OFFSET 0xcbf29ce484222325ull

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
	*hash = fnv1a64(FNV64_OFFSET, k, strlen(k));
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
	*hash = fnv1a64(fnv1a64(FNV64_OFFSET, id, sizeof(id)), &blk, 1);
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
	if (!str_terminated(c->log_level, sizeof(c->log_level)) ||
	    gw_log_parse_level(c->log_level, &lvl))
		return gw_errf(err, errlen, -EINVAL, "log_level: not one of err, warn, notice, info, debug");
	if (c->reactors > CFG_REACTORS_MAX)
		return gw_errf(err, errlen, -EINVAL, "reactors: %u out of range (0..%u)", c->reactors,
			       CFG_REACTORS_MAX);
	if (!str_terminated(c->state_dir, sizeof(c->state_dir)) || !c->state_dir[0])
		return gw_errf(err, errlen, -EINVAL, "state_dir: must not be empty");
	if (!str_terminated(c->ctl_socket, sizeof(c->ctl_socket)) || !c->ctl_socket[0] ||
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
	if (!str_terminated(c->shared_state_dir, sizeof(c->shared_state_dir)) ||
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

/* ------------------------------------------------------------------------ */
/* derived defaults                                                         */

#define FNV64_PRIME  0x100000001b3ull

static uint64_t fnv1a64(uint64_t h, const void *data, size_t len)
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
	uint64_t h = fnv1a64(FNV64_OFFSET, iqn, strlen(iqn) + 1);

	h = fnv1a64(h, num, (size_t)n);
	*h1 = h;
	*h2 = fnv1a64(h, "naa", 3);
}

/* A LUN's derived defaults: serial and NAA from the target's IQN and the LUN number. */
static void lun_finalize(const char *iqn, struct gw_lun_cfg *l)
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
			lun_finalize(t->iqn, &t->luns[li]);
	}
}

int gw_lun_parse(struct json_object *obj, const char *iqn, size_t ti, size_t li,
		 struct gw_lun_cfg *out, char *err, size_t errlen)
{
	struct pctx ctx = { .err = err, .errlen = errlen };
	int rc;

	if (err && errlen)
		err[0] = '\0';
	lun_init(out, li);
	path_set_len(&ctx, (size_t)snprintf(ctx.path, sizeof(ctx.path), "targets[%zu].luns[%zu]",
					    ti, li));
	rc = strings_check(obj, ctx.path, err, errlen);
	if (rc)
		return rc;
	rc = parse_object(&ctx, obj, &lun_table, out);
	if (rc)
		return rc;
	rc = validate_lun_one(out, ti, li, err, errlen);
	if (rc)
		return rc;
	lun_finalize(iqn, out);
	return 0;
}
