/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Addresses appearing on and disappearing from this node's interfaces, as
 * rtnetlink reports them (RTM_NEWADDR, RTM_DELADDR), and the helpers a
 * portal needs to tell whether such an event is about its own address.
 * Parsing is pure (unit tested); gw_ifaddr_open() is the only system call.
 */
#ifndef ISERGW_IFADDR_H
#define ISERGW_IFADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum gw_ifaddr_event {
	GW_IFADDR_NEW = 1,      /* an address was added (or changed: e.g. DAD finished) */
	GW_IFADDR_DEL = 2,      /* an address was removed */
};

/* One address event: the address (port 0) and its interface index. */
typedef void (*gw_ifaddr_cb)(void *arg, enum gw_ifaddr_event ev,
			     const struct sockaddr_storage *addr, uint32_t ifindex);

/*
 * Walk one datagram read from a NETLINK_ROUTE socket and call cb for every
 * IPv4/IPv6 address message in it (IPv4: IFA_LOCAL, else IFA_ADDRESS; IPv6:
 * IFA_ADDRESS). Other messages are skipped. Returns the number of address
 * events, or -EINVAL when a header or attribute runs past the datagram (the
 * events before it were reported), or -ENOBUFS for an NLMSG_ERROR carrying
 * it (the kernel dropped events: the caller must assume anything changed).
 */
int gw_ifaddr_parse(const void *buf, size_t len, gw_ifaddr_cb cb, void *arg);

/* A non-blocking NETLINK_ROUTE socket subscribed to IPv4 and IPv6 address events: fd or -errno. */
int gw_ifaddr_open(void);

/* Same family and IP address; ports ignored, IPv6 scope ids compared when both are set. */
bool gw_sockaddr_same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b);

/* 0.0.0.0 or :: (a portal listening on every address never waits for one). */
bool gw_sockaddr_is_any(const struct sockaddr_storage *a);

#endif
