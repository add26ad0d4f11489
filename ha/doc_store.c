/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster document on disk (doc.h, docs/ha.md "The document on disk"):
 * cluster.json written whole (temporary file, fsync, rename, fsync of the
 * directory), the journal of LUN changes appended after it, and loading
 * both back (a torn last journal line is dropped).
 */
#include "doc_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/fsutil.h"
#include "config/config.h"

#define ERR_MAX 512

/* The text of a negative errno (thread-safe). */
static const char *errstr(int rc, char *buf, size_t len)
{
	return strerror_r(-rc, buf, len);
}

/* ------------------------------------------------------------- storage */

/* A file created, renamed or unlinked in dir lasts once this returns 0. */
static int fsync_dir(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc;

	if (dfd < 0)
		return -errno;
	rc = fsync(dfd) < 0 ? -errno : 0;
	close(dfd);
	return rc;
}

/*
 * The end of writing fd: rc is the writes' result; unless it failed, fd is
 * synced (sync: fsync or fdatasync); fd is closed. The first error, or 0.
 */
static int sync_close(int fd, int rc, int (*sync)(int fd))
{
	if (!rc && sync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}

int ha_doc_save(const struct ha_doc *d, const char *dir)
{
	if (!d || !d->text)
		return -EINVAL;
	return ha_doc_save_text(d->text, d->text_len, dir);
}

int ha_doc_save_text(const char *text, size_t len, const char *dir)
{
	char path[4096], tmp[4096];
	int fd, rc;

	if (!text || !dir)
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, HA_DOC_FILE) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, HA_DOC_FILE) >= sizeof(tmp))
		return -ENAMETOOLONG;
	if (unlink(tmp) < 0 && errno != ENOENT)
		return -errno;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = gw_write_all(fd, text, len);
	if (!rc)
		rc = gw_write_all(fd, "\n", 1);
	rc = sync_close(fd, rc, fsync);
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		goto err_unlink_tmp;
	/* the journal's changes are in the document now: gone with the same directory sync */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", dir, HA_JOURNAL_FILE) < sizeof(tmp) &&
	    unlink(tmp) < 0 && errno != ENOENT)
		return -errno;
	return fsync_dir(dir);

err_unlink_tmp:
	unlink(tmp);
	return rc;
}

/* A file's bytes (len of them, NUL-terminated) as its text: no NUL byte, trailing newlines cut. */
static int doc_file_text(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	if (strlen(buf) != len)
		return gw_errf(err, errlen, -EBADMSG, "%s: contains a NUL byte", path);
	while (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	return 0;
}

/* The whole file (NUL-terminated, without its trailing newlines) into *out. */
static int read_doc_file(const char *path, char **out, char *err, size_t errlen)
{
	char ebuf[64];
	struct stat st;
	size_t got = 0;
	char *buf;
	int fd, rc;

	*out = NULL;
	fd = gw_open_regular(path, O_RDONLY, &st);
	if (fd == -GW_ENOTREG)
		return gw_errf(err, errlen, -EBADMSG, "%s: %s, not a regular file", path,
			       gw_file_kind(&st));
	if (fd < 0)
		return gw_errf(err, errlen, fd, "%s: %s", path, errstr(fd, ebuf, sizeof(ebuf)));
	if ((uint64_t)st.st_size > (uint64_t)HA_DOC_MAX + 1) {
		rc = gw_errf(err, errlen, -EBADMSG, "%s: larger than %u bytes", path, HA_DOC_MAX);
		goto err_close;
	}
	rc = gw_config_read_fd(fd, (size_t)st.st_size, &buf, &got);
	if (rc) {
		gw_errf(err, errlen, rc, "%s: %s", path, rc == -ENOMEM ? "out of memory" :
			errstr(rc, ebuf, sizeof(ebuf)));
		goto err_close;
	}
	close(fd);
	rc = doc_file_text(path, buf, got, err, errlen);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;

err_close:
	close(fd);
	return rc;
}

int ha_doc_journal_append(const char *lines, size_t len, const char *dir)
{
	char path[4096];
	bool created = false;
	int fd, rc;

	if (!lines || !dir)
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, HA_JOURNAL_FILE) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		created = true;
	}
	if (fd < 0)
		return -errno;
	rc = sync_close(fd, gw_write_all(fd, lines, len), fdatasync);
	if (rc || !created)
		return rc;
	return fsync_dir(dir);
}

/*
 * The journal's lines (text, the file path's, modified) that follow d,
 * applied in order (d replaced); the first that does not is logged.
 */
static void journal_replay(const char *path, char *text, struct ha_doc **d)
{
	char why[ERR_MAX] = "";
	char *line, *next;
	unsigned int applied = 0, line_no = 0;

	for (line = text; line && *line; line = next) {
		struct json_object *o = NULL, *g, *l, *n, *t;
		struct ha_doc *nd = NULL;
		const char *lun_json = NULL;
		int rc;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line_no++;
		o = json_tokener_parse(line);
		if (!o || !json_object_object_get_ex(o, "generation", &g) ||
		    !json_object_object_get_ex(o, "lun", &l) ||
		    !json_object_object_get_ex(o, "number", &n) ||
		    !json_object_object_get_ex(o, "target", &t) ||
		    !json_object_is_type(t, json_type_string) || !json_object_is_type(n, json_type_int)) {
			snprintf(why, sizeof(why), "line %u: not a journal line", line_no);
			json_object_put(o);
			break;
		}
		if ((uint64_t)json_object_get_int64(g) <= (*d)->generation) {
			json_object_put(o);
			continue; /* in the document already */
		}
		if ((uint64_t)json_object_get_int64(g) != (*d)->generation + 1) {
			snprintf(why, sizeof(why), "line %u: generation %" PRId64 " does not follow %"
				 PRIu64, line_no, json_object_get_int64(g), (*d)->generation);
			json_object_put(o);
			break;
		}
		if (l && !json_object_is_type(l, json_type_null))
			lun_json = json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN);
		rc = ha_doc_with_lun(*d, json_object_get_string(t), (uint32_t)json_object_get_int64(n),
				     lun_json, &nd, why, sizeof(why));
		json_object_put(o);
		if (rc) {
			char line_why[ERR_MAX];

			snprintf(line_why, sizeof(line_why), "line %u: %s", line_no, why);
			snprintf(why, sizeof(why), "%s", line_why);
			break;
		}
		ha_doc_free(*d);
		*d = nd;
		applied++;
		why[0] = '\0';
	}
	if (why[0])
		GW_WARN(HA_DOC_COMP, "%s: replay stopped at %s (generation %" PRIu64 " kept)", path, why,
			(*d)->generation);
	if (applied)
		GW_NOTICE(HA_DOC_COMP, "%s: %u LUN change(s) replayed: generation %" PRIu64, path,
			  applied, (*d)->generation);
}

int ha_doc_load_text(const char *path, char *text, size_t len, struct ha_doc **out, char *err,
		     size_t errlen)
{
	char why[ERR_MAX];
	int rc;

	*out = NULL;
	rc = doc_file_text(path, text, len, err, errlen);
	if (rc)
		return rc;
	rc = ha_doc_parse(text, out, why, sizeof(why));
	if (rc == -ENOMEM)
		return gw_errf(err, errlen, rc, "%s: out of memory", path);
	if (rc)
		return gw_errf(err, errlen, -EBADMSG, "%s: %s", path, why);
	return 0;
}

void ha_doc_journal_replay(const char *path, char *text, size_t len, struct ha_doc **d)
{
	char why[ERR_MAX];

	if (doc_file_text(path, text, len, why, sizeof(why)))
		GW_WARN(HA_DOC_COMP, "journal not replayed: %s", why);
	else
		journal_replay(path, text, d);
}

int ha_doc_load(const char *dir, struct ha_doc **out, char *err, size_t errlen)
{
	char path[4096], why[ERR_MAX];
	char *text;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!out || !dir)
		return -EINVAL;
	*out = NULL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, HA_DOC_FILE) >= sizeof(path))
		return gw_errf(err, errlen, -ENAMETOOLONG, "%s: path too long", dir);
	rc = read_doc_file(path, &text, err, errlen);
	if (rc)
		return rc;
	rc = ha_doc_load_text(path, text, strlen(text), out, err, errlen);
	free(text);
	if (rc)
		return rc;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, HA_JOURNAL_FILE) >= sizeof(path) ||
	    access(path, F_OK) < 0)
		return 0;
	if (read_doc_file(path, &text, why, sizeof(why))) {
		GW_WARN(HA_DOC_COMP, "journal not replayed: %s", why);
		return 0;
	}
	ha_doc_journal_replay(path, text, strlen(text), out);
	free(text);
	return 0;
}
