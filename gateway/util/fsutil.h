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

#endif
