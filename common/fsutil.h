/* SPDX-License-Identifier: Apache-2.0 */
#ifndef ISERGW_UTIL_FSUTIL_H
#define ISERGW_UTIL_FSUTIL_H

/*
 * Creates a directory and its missing parents with mode 0700 (like mkdir -p);
 * existing ones are left as they are. 0 or a negative errno (-ENOTDIR when
 * path is there but is no directory).
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

/*
 * Opens a file that must be a regular file, for reading (flags: O_RDONLY or
 * O_RDWR and more; O_CLOEXEC is added) without waiting on what is not one: a
 * FIFO would block open() until a writer comes, and a device can too, so the
 * open is non-blocking and the check is on the open file (no race with a
 * rename). Returns the fd (blocking again; *st filled when st is not NULL),
 * -errno of open() or fstat(), or -GW_ENOTREG when it is not a regular file
 * (*st then tells what it is).
 */
#define GW_ENOTREG EMEDIUMTYPE
struct stat;
int gw_open_regular(const char *path, int flags, struct stat *st);
/* What st is, for a message: "a FIFO", "a directory", "a socket"... */
const char *gw_file_kind(const struct stat *st);

#endif
