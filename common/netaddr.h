/* SPDX-License-Identifier: Apache-2.0 */
#ifndef ISERGW_NETADDR_H
#define ISERGW_NETADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* "a.b.c.d:port" or "[v6]:port" for log lines; "unknown" otherwise. */
void gw_fmt_sockaddr(const struct sockaddr *sa, char *out, size_t len);

#endif
