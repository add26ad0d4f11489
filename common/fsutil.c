/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"

int gw_mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strnlen(path, sizeof(buf));

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0) {
		struct stat st;

		if (errno != EEXIST)
			return -errno;
		/* there already: a directory (or a link to one), not a file in its place */
		if (stat(buf, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
	}
	return 0;
}

int gw_mkdir_parents(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strnlen(path, sizeof(buf));
	char *slash;

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = '\0';
	return gw_mkdir_p(buf);
}

/* A socket file left by a process that died is replaced; a live one is not. */
static int clear_stale(const struct sockaddr_un *sa, const char *comp, const char *what)
{
	struct stat st;
	int fd, rc;

	if (lstat(sa->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		gw_log(GW_LOG_ERR, comp, "%s exists and is not a socket: not replacing it",
		       sa->sun_path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (rc == 0) {
		gw_log(GW_LOG_ERR, comp, "%s: another daemon is serving this %s", sa->sun_path, what);
		return -EADDRINUSE;
	}
	gw_log(GW_LOG_NOTICE, comp, "replacing stale %s %s", what, sa->sun_path);
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int gw_unix_listen(const char *path, const char *comp, const char *what, int backlog)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old_umask;
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	rc = gw_mkdir_parents(path);
	if (rc) {
		gw_log(GW_LOG_ERR, comp, "cannot create the directory of %s: %s", path,
		       strerror(-rc));
		return rc;
	}
	rc = clear_stale(&sa, comp, what);
	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	old_umask = umask(0177);
	rc = bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old_umask);
	if (rc) {
		gw_log(GW_LOG_ERR, comp, "cannot bind %s: %s", path, strerror(-rc));
		goto err_close;
	}
	if (chmod(path, 0600) < 0 || listen(fd, backlog) < 0) {
		rc = -errno;
		gw_log(GW_LOG_ERR, comp, "cannot listen on %s: %s", path, strerror(-rc));
		goto err_unlink;
	}
	return fd;

err_unlink:
	unlink(path);
err_close:
	close(fd);
	return rc;
}

int gw_unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

int gw_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int gw_open_regular(const char *path, int flags, struct stat *st)
{
	struct stat own;
	int fd = open(path, flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int fl;

	if (!st)
		st = &own;
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return -GW_ENOTREG;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && !(flags & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

const char *gw_file_kind(const struct stat *st)
{
	switch (st->st_mode & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFLNK: return "a symbolic link";
	default: return "not a file";
	}
}
