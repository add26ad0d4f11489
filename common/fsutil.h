/* SPDX-License-Identifier: Apache-2.0 */
#ifndef ISERGW_UTIL_FSUTIL_H
#define ISERGW_UTIL_FSUTIL_H

/*
 * Creates a directory and its missing parents with mode 0700 (like mkdir -p);
 * existing ones are left as they are. 0 or a negative errno.
 */
int gw_mkdir_p(const char *path);
/* The same for the directory that holds path (nothing when it has none). */
int gw_mkdir_parents(const char *path);

/*
 * A root-only unix stream socket listening at path (non-blocking, close on
 * exec): the directory created 0700 when missing, the socket file 0600; a
 * socket file left by a process that died is replaced, one somebody still
 * answers on is not (-EADDRINUSE), nor a path that is no socket (-EEXIST).
 * Logs under component comp, naming what the socket is for (what). Returns
 * the fd, or a negative errno.
 */
int gw_unix_listen(const char *path, const char *comp, const char *what, int backlog);
/* A blocking, close-on-exec connection to the unix stream socket at path: the fd or -errno. */
int gw_unix_connect(const char *path);

/* Writes all n bytes to a blocking fd (EINTR retried): 0 or a negative errno. */
int gw_write_all(int fd, const void *p, size_t n);

#endif
