/* SPDX-License-Identifier: Apache-2.0 */
#include "common/ifaddr.h"

#include <errno.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

static void addr_event(const struct nlmsghdr *nh, gw_ifaddr_cb cb, void *arg, int *count)
{
	/* NLMSG_DATA, IFA_RTA, RTA_NEXT and RTA_DATA cast const away: spelled out here */
	const struct ifaddrmsg *ifa = (const void *)((const char *)nh + NLMSG_HDRLEN);
	const void *local = NULL, *address = NULL;
	size_t alen = ifa->ifa_family == AF_INET ? 4 : 16;
	struct sockaddr_storage ss;
	int rlen;

	if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return;
	if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
		return;
	rlen = (int)IFA_PAYLOAD(nh);
	for (const struct rtattr *rta = (const void *)((const char *)ifa + NLMSG_ALIGN(sizeof(*ifa)));
	     RTA_OK(rta, rlen);
	     rlen -= RTA_ALIGN(rta->rta_len), rta = (const void *)((const char *)rta + RTA_ALIGN(rta->rta_len))) {
		const void *data = (const char *)rta + RTA_LENGTH(0);

		if (RTA_PAYLOAD(rta) < alen)
			continue;
		if (rta->rta_type == IFA_LOCAL)
			local = data;
		else if (rta->rta_type == IFA_ADDRESS)
			address = data;
	}
	/* IPv4: IFA_LOCAL is the interface's address (IFA_ADDRESS the peer's on point-to-point) */
	if (ifa->ifa_family == AF_INET && local)
		address = local;
	if (!address)
		return;
	memset(&ss, 0, sizeof(ss));
	if (ifa->ifa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, address, 4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, address, 16);
		if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr))
			in6->sin6_scope_id = ifa->ifa_index;
	}
	cb(arg, nh->nlmsg_type == RTM_NEWADDR ? GW_IFADDR_NEW : GW_IFADDR_DEL, &ss, ifa->ifa_index);
	(*count)++;
}

int gw_ifaddr_parse(const void *buf, size_t len, gw_ifaddr_cb cb, void *arg)
{
	size_t off = 0;
	int count = 0;

	while (off < len) {
		const struct nlmsghdr *nh = (const void *)((const char *)buf + off);

		if (len - off < sizeof(*nh) || nh->nlmsg_len < sizeof(*nh) ||
		    nh->nlmsg_len > len - off)
			return -EINVAL;
		if (nh->nlmsg_type == NLMSG_DONE)
			break;
		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = (const void *)((const char *)nh + NLMSG_HDRLEN);

			if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error == -ENOBUFS)
				return -ENOBUFS;
		} else if (nh->nlmsg_type == RTM_NEWADDR || nh->nlmsg_type == RTM_DELADDR) {
			addr_event(nh, cb, arg, &count);
		}
		off += NLMSG_ALIGN(nh->nlmsg_len);
	}
	return count;
}

int gw_ifaddr_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
	int rc;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

bool gw_sockaddr_same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const struct sockaddr_in *)a;
		const struct sockaddr_in *y = (const struct sockaddr_in *)b;

		return x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)a;
		const struct sockaddr_in6 *y = (const struct sockaddr_in6 *)b;

		if (x->sin6_scope_id && y->sin6_scope_id && x->sin6_scope_id != y->sin6_scope_id)
			return false;
		return memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
	}
	return false;
}

bool gw_sockaddr_is_any(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (a->ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
	return false;
}
