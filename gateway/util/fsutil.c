/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fsutil.h"

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
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
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
