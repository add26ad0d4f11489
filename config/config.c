/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's configuration (docs/configuration.md).
 *
 * Parsing is strict and table driven: every JSON object is checked against a
 * table of known keys (config_fields.c, schema.h), so an unknown key, a
 * wrong type or an out-of-range number fails the load with a message naming
 * its key path ("targets[0].luns[1].colour: unknown key"). Cross-field rules
 * live in gw_config_validate() (config_validate.c), derived defaults (LUN
 * serial and NAA) in gw_config_finalize() (config_defaults.c).
 * gw_config_load_*() run all three.
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

#include "common/fsutil.h"
#include "common/log.h"
#include "config/names.h"
#include "config_priv.h"

/* ------------------------------------------------------------------------ */
/* small helpers                                                            */

int cfg_str_copy(char *dst, size_t dstsz, const char *src)
{
	size_t n = strlen(src);

	if (n >= dstsz)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

/* NUL-terminated within its buffer? (code-built configs) */
bool cfg_str_terminated(const char *s, size_t sz)
{
	return memchr(s, '\0', sz) != NULL;
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

int cfg_hex_val(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

bool cfg_all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cfg_hex_val(s[i]) < 0)
			return false;
	return true;
}

/* Printable ASCII only (SCSI INQUIRY/VPD strings). */
bool cfg_printable_ascii(const char *s)
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
/* JSON parsing                                                             */

const char *cfg_jtype(const struct json_object *v)
{
	return json_type_to_name(json_object_get_type(v));
}

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

static int parse_field(struct gw_vctx *c, const struct gw_field *f, struct json_object *v,
		       void *base)
{
	char *dst = (char *)base + f->off;

	switch (f->kind) {
	case GW_FK_UINT: {
		int64_t x;

		if (!json_object_is_type(v, json_type_int))
			return gw_verr(c, "expected an integer, got %s", cfg_jtype(v));
		x = json_object_get_int64(v);
		if (x < 0 || (uint64_t)x < f->min || (uint64_t)x > f->max)
			return gw_verr(c, "%s out of range (%llu..%llu)", json_object_get_string(v),
				   (unsigned long long)f->min, (unsigned long long)f->max);
		return store_uint(dst, f->size, (uint64_t)x);
	}
	case GW_FK_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return gw_verr(c, "expected true or false, got %s", cfg_jtype(v));
		*(bool *)(void *)dst = json_object_get_boolean(v);
		return 0;
	case GW_FK_STR: {
		const char *s;
		size_t len;

		if (!json_object_is_type(v, json_type_string))
			return gw_verr(c, "expected a string, got %s", cfg_jtype(v));
		s = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
		if (strlen(s) != len)
			return gw_verr(c, "contains a NUL character");
		if (len >= f->size)
			return gw_verr(c, "too long (%zu bytes, max %zu)", len, f->size - 1);
		if (f->min && len == 0)
			return gw_verr(c, "must not be empty");
		memcpy(dst, s, len + 1);
		return 0;
	}
	case GW_FK_SIZE: {
		uint64_t x;

		if (json_object_is_type(v, json_type_int)) {
			if (json_object_get_int64(v) < 0)
				return gw_verr(c, "must not be negative");
			x = json_object_get_uint64(v);
		} else if (json_object_is_type(v, json_type_string)) {
			int rc = gw_parse_size(json_object_get_string(v), &x);

			if (rc == -ERANGE)
				return gw_verr(c, "\"%s\" is too large", json_object_get_string(v));
			if (rc)
				return gw_verr(c, "\"%s\" is not a size (digits with an optional K, M, G or T suffix)",
					   json_object_get_string(v));
		} else {
			return gw_verr(c, "expected an integer or a size string, got %s", cfg_jtype(v));
		}
		if (x > f->max)
			return gw_verr(c, "too large (max %llu)", (unsigned long long)f->max);
		return store_uint(dst, f->size, x);
	}
	case GW_FK_OBJ:
		return cfg_parse_object(c, v, f->sub, dst);
	case GW_FK_ARRAY: {
		void *arr;
		int rc;

		if (f->max_items && json_object_is_type(v, json_type_array) &&
		    json_object_array_length(v) > f->max_items)
			return gw_verr(c, "too many %s (max %zu)", f->many, f->max_items);
		/* the field is a pointer to its elements' type: copied as the void * it converts to */
		memcpy(&arr, dst, sizeof(arr));
		rc = cfg_parse_array(c, v, f->size, &arr, (size_t *)(void *)((char *)base + f->count_off),
				     f->init, f->sub);
		memcpy(dst, &arr, sizeof(arr));
		return rc;
	}
	case GW_FK_CUSTOM:
		return f->fn(c, v, base);
	case GW_FK_NONE:
		break;
	}
	return gw_verr(c, "internal error: bad field kind");
}

int cfg_parse_object(struct gw_vctx *c, struct json_object *obj, const struct gw_ftable *t,
		     void *base)
{
	struct json_object_iterator it, end;
	bool seen[FIELDS_MAX] = { false };
	int rc;

	if (!json_object_is_type(obj, json_type_object))
		return gw_verr(c, "expected an object, got %s", cfg_jtype(obj));
	it = json_object_iter_begin(obj);
	end = json_object_iter_end(obj);
	for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
		const char *key = json_object_iter_peek_name(&it);
		struct json_object *v = json_object_iter_peek_value(&it);
		size_t i, old;

		for (i = 0; i < t->n; i++)
			if (strcmp(t->f[i].key, key) == 0)
				break;
		old = gw_vpath_key(c, key);
		if (i == t->n)
			return gw_verr(c, "unknown key");
		rc = parse_field(c, &t->f[i], v, base);
		if (rc)
			return rc;
		gw_vpath_pop(c, old);
		seen[i] = true;
	}
	for (size_t i = 0; i < t->n; i++) {
		if (t->f[i].required && !seen[i]) {
			gw_vpath_key(c, t->f[i].key);
			return gw_verr(c, "missing");
		}
	}
	return 0;
}

/* Parses an array of objects into a freshly allocated array of elsz-sized elements. */
int cfg_parse_array(struct gw_vctx *c, struct json_object *v, size_t elsz, void **arr, size_t *n,
		       void (*init)(void *el, size_t idx), const struct gw_ftable *t)
{
	size_t len;
	char *a;

	if (!json_object_is_type(v, json_type_array))
		return gw_verr(c, "expected an array, got %s", cfg_jtype(v));
	if (*arr)
		return gw_verr(c, "given twice");
	len = json_object_array_length(v);
	if (len == 0)
		return 0;
	a = calloc(len, elsz);
	if (!a)
		return gw_errf(c->err, c->errlen, -EINVAL, "out of memory"), -ENOMEM;
	*arr = a;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		size_t old = gw_vpath_index(c, i);
		int rc;

		init(a + i * elsz, i);
		rc = cfg_parse_object(c, json_object_array_get_idx(v, i), t, a + i * elsz);
		if (rc)
			return rc;
		gw_vpath_pop(c, old);
	}
	return 0;
}


void gw_config_line_col(const char *s, size_t off, unsigned int *line, unsigned int *col)
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
	char path[GW_VPATH_MAX], why[64];

	if (!gw_json_strings_check(o, prefix, path, sizeof(path), why, sizeof(why)))
		return 0;
	return gw_errf(err, errlen, -EINVAL, "%s: %s", path[0] ? path : "config", why);
}

int gw_json_parse_text(const char *text, size_t len, const char *trailing,
		       struct json_object **out, char *err, size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *root;
	unsigned int line, col;
	int rc = 0;

	*out = NULL;
	tok = json_tokener_new();
	if (!tok)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (!root) {
		enum json_tokener_error jerr = json_tokener_get_error(tok);

		gw_config_line_col(text, json_tokener_get_parse_end(tok), &line, &col);
		rc = gw_errf(err, errlen, -EINVAL, "line %u column %u: %s", line, col,
			     jerr == json_tokener_continue || jerr == json_tokener_success
				     ? "unexpected end of input"
				     : json_tokener_error_desc(jerr));
		goto out;
	}
	for (size_t i = json_tokener_get_parse_end(tok); i < len; i++) {
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r') {
			gw_config_line_col(text, i, &line, &col);
			rc = gw_errf(err, errlen, -EINVAL, "line %u column %u: %s", line, col, trailing);
			json_object_put(root);
			goto out;
		}
	}
	*out = root;
out:
	json_tokener_free(tok);
	return rc;
}

int gw_config_load_string_base(const char *json, const struct gw_config *base,
			       struct gw_config **out, char *err, size_t errlen)
{
	struct gw_vctx ctx = { .err = err, .errlen = errlen };
	struct json_object *root;
	struct gw_config *cfg;
	size_t len;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!json || !out)
		return gw_errf(err, errlen, -EINVAL, "config: no input");
	*out = NULL;
	len = strlen(json);
	if (len > CFG_FILE_MAX)
		return gw_errf(err, errlen, -EINVAL, "config: larger than %u bytes", CFG_FILE_MAX);

	rc = gw_json_parse_text(json, len, "trailing data after the configuration", &root, err,
				errlen);
	if (rc)
		return rc;

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
	rc = cfg_parse_object(&ctx, root, &gw_schema_config, cfg);
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
	*out = cfg;
	return 0;

err_free_cfg:
	gw_config_free(cfg);
err_put_root:
	json_object_put(root);
	return rc;
}

int gw_config_read_fd(int fd, size_t size, char **buf, size_t *len)
{
	size_t got = 0;

	*buf = malloc(size + 1);
	if (!*buf)
		return -ENOMEM;
	while (got < size) {
		ssize_t n = read(fd, *buf + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int rc = -errno;

			free(*buf);
			*buf = NULL;
			return rc;
		}
		if (n == 0)
			break; /* shrank under us: what is there */
		got += (size_t)n;
	}
	(*buf)[got] = '\0';
	*len = got;
	return 0;
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
	fd = gw_open_regular(path, O_RDONLY, &st);
	if (fd == -GW_ENOTREG)
		return gw_errf(err, errlen, -EINVAL, "%s: %s, not a regular file", path,
			       gw_file_kind(&st));
	if (fd < 0) {
		gw_errf(err, errlen, -EINVAL, "%s: %s", path, strerror_r(-fd, ebuf, sizeof(ebuf)));
		return fd;
	}
	if ((uint64_t)st.st_size > CFG_FILE_MAX) {
		rc = gw_errf(err, errlen, -EINVAL, "%s: larger than %u bytes", path, CFG_FILE_MAX);
		goto err_close;
	}
	rc = gw_config_read_fd(fd, (size_t)st.st_size, &buf, &got);
	if (rc) {
		gw_errf(err, errlen, -EINVAL, "%s: %s", path, rc == -ENOMEM ? "out of memory" :
			strerror_r(-rc, ebuf, sizeof(ebuf)));
		goto err_close;
	}
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

int gw_lun_parse(struct json_object *obj, const char *iqn, size_t ti, size_t li,
		 struct gw_lun_cfg *out, char *err, size_t errlen)
{
	struct gw_vctx ctx;
	char base[64];
	int rc;

	snprintf(base, sizeof(base), "targets[%zu].luns[%zu]", ti, li);
	gw_vctx_init(&ctx, err, errlen, base);
	cfg_lun_init(out, li);
	rc = strings_check(obj, ctx.path, err, errlen);
	if (rc)
		return rc;
	rc = cfg_parse_object(&ctx, obj, &gw_schema_lun, out);
	if (rc)
		return rc;
	rc = cfg_validate_lun_one(out, ti, li, err, errlen);
	if (rc)
		return rc;
	cfg_lun_finalize(iqn, out);
	return 0;
}
