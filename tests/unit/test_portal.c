/* Portals waiting for their address: rtnetlink address messages parsed
 * (util/ifaddr.c), the address a portal compares with them, the errors that
 * make a portal wait rather than fail, and the retry backoff (core/portal.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/iscsi.h"
#include "common/ifaddr.h"

/* A datagram under construction: messages appended one after another. */
struct dgram {
	_Alignas(struct nlmsghdr) uint8_t buf[1024];
	size_t len;
};

static struct nlmsghdr *msg_begin(struct dgram *d, uint16_t type)
{
	struct nlmsghdr *nh = (struct nlmsghdr *)(d->buf + d->len);

	memset(nh, 0, NLMSG_SPACE(0));
	nh->nlmsg_type = type;
	nh->nlmsg_len = NLMSG_LENGTH(0);
	return nh;
}

static void msg_put(struct nlmsghdr *nh, const void *data, size_t len)
{
	memcpy((uint8_t *)nh + NLMSG_ALIGN(nh->nlmsg_len), data, len);
	nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + (uint32_t)len;
}

static void msg_attr(struct nlmsghdr *nh, uint16_t type, const void *data, size_t len)
{
	struct rtattr rta = { .rta_len = (unsigned short)RTA_LENGTH(len), .rta_type = type };
	uint8_t pad[RTA_SPACE(16)] = { 0 };

	memcpy(pad, &rta, sizeof(rta));
	memcpy(pad + RTA_LENGTH(0), data, len);
	msg_put(nh, pad, RTA_SPACE(len));
}

static void msg_end(struct dgram *d, struct nlmsghdr *nh)
{
	d->len += NLMSG_ALIGN(nh->nlmsg_len);
}

static void add_addr(struct dgram *d, uint16_t type, int family, const char *local,
		     const char *address, uint32_t ifindex)
{
	struct ifaddrmsg ifa = { .ifa_family = (uint8_t)family, .ifa_index = ifindex };
	struct nlmsghdr *nh = msg_begin(d, type);
	uint8_t bin[16];

	msg_put(nh, &ifa, sizeof(ifa));
	if (address) {
		assert_int_equal(inet_pton(family, address, bin), 1);
		msg_attr(nh, IFA_ADDRESS, bin, family == AF_INET ? 4 : 16);
	}
	if (local) {
		assert_int_equal(inet_pton(family, local, bin), 1);
		msg_attr(nh, IFA_LOCAL, bin, family == AF_INET ? 4 : 16);
	}
	msg_end(d, nh);
}

struct seen {
	int n;
	enum gw_ifaddr_event ev[8];
	char addr[8][INET6_ADDRSTRLEN];
	uint32_t ifindex[8];
	uint32_t scope[8];
};

static void record(void *arg, enum gw_ifaddr_event ev, const struct sockaddr_storage *ss,
		   uint32_t ifindex)
{
	struct seen *s = arg;

	assert_true(s->n < 8);
	s->ev[s->n] = ev;
	s->ifindex[s->n] = ifindex;
	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, s->addr[s->n],
			  sizeof(s->addr[0]));
	} else {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, s->addr[s->n],
			  sizeof(s->addr[0]));
		s->scope[s->n] = ((const struct sockaddr_in6 *)ss)->sin6_scope_id;
	}
	s->n++;
}

static void test_parse_new_and_del(void **state)
{
	struct dgram d = { .len = 0 };
	struct seen s = { 0 };

	(void)state;
	add_addr(&d, RTM_NEWADDR, AF_INET, "10.34.0.100", "10.34.0.100", 3);
	add_addr(&d, RTM_DELADDR, AF_INET6, NULL, "fd00:34::100", 4);
	assert_int_equal(gw_ifaddr_parse(d.buf, d.len, record, &s), 2);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.ev[0], GW_IFADDR_NEW);
	assert_string_equal(s.addr[0], "10.34.0.100");
	assert_int_equal(s.ifindex[0], 3);
	assert_int_equal(s.ev[1], GW_IFADDR_DEL);
	assert_string_equal(s.addr[1], "fd00:34::100");
	assert_int_equal(s.scope[1], 0);
}

/* IPv4 point-to-point: IFA_ADDRESS is the peer, IFA_LOCAL the node's own address. */
static void test_parse_ipv4_prefers_local(void **state)
{
	struct dgram d = { .len = 0 };
	struct seen s = { 0 };

	(void)state;
	add_addr(&d, RTM_NEWADDR, AF_INET, "192.0.2.1", "192.0.2.2", 1);
	assert_int_equal(gw_ifaddr_parse(d.buf, d.len, record, &s), 1);
	assert_string_equal(s.addr[0], "192.0.2.1");
}

static void test_parse_link_local_scope(void **state)
{
	struct dgram d = { .len = 0 };
	struct seen s = { 0 };

	(void)state;
	add_addr(&d, RTM_NEWADDR, AF_INET6, NULL, "fe80::1", 7);
	assert_int_equal(gw_ifaddr_parse(d.buf, d.len, record, &s), 1);
	assert_int_equal(s.scope[0], 7);
}

static void test_parse_skips_other_messages(void **state)
{
	struct dgram d = { .len = 0 };
	struct seen s = { 0 };
	struct nlmsghdr *nh;
	struct ifaddrmsg ifa = { .ifa_family = AF_PACKET };

	(void)state;
	nh = msg_begin(&d, RTM_NEWLINK);
	msg_put(nh, &ifa, sizeof(ifa));
	msg_end(&d, nh);
	nh = msg_begin(&d, RTM_NEWADDR); /* a family we do not serve */
	msg_put(nh, &ifa, sizeof(ifa));
	msg_end(&d, nh);
	nh = msg_begin(&d, RTM_NEWADDR); /* an address message without an address */
	ifa.ifa_family = AF_INET;
	msg_put(nh, &ifa, sizeof(ifa));
	msg_end(&d, nh);
	add_addr(&d, RTM_NEWADDR, AF_INET, "10.0.0.1", NULL, 2);
	nh = msg_begin(&d, NLMSG_DONE);
	msg_end(&d, nh);
	add_addr(&d, RTM_NEWADDR, AF_INET, "10.0.0.2", NULL, 2); /* after DONE: not read */
	assert_int_equal(gw_ifaddr_parse(d.buf, d.len, record, &s), 1);
	assert_string_equal(s.addr[0], "10.0.0.1");
}

static void test_parse_truncated(void **state)
{
	struct dgram d = { .len = 0 };
	struct seen s = { 0 };

	(void)state;
	add_addr(&d, RTM_NEWADDR, AF_INET, "10.0.0.1", NULL, 2);
	add_addr(&d, RTM_NEWADDR, AF_INET, "10.0.0.2", NULL, 2);
	/* the second message cut short: the first is reported, then the error */
	assert_int_equal(gw_ifaddr_parse(d.buf, d.len - 4, record, &s), -EINVAL);
	assert_int_equal(s.n, 1);
	s.n = 0;
	assert_int_equal(gw_ifaddr_parse(d.buf, 7, record, &s), -EINVAL);
	assert_int_equal(s.n, 0);
	assert_int_equal(gw_ifaddr_parse(d.buf, 0, record, &s), 0);
}

static void test_parse_overrun(void **state)
{
	struct dgram d = { .len = 0 };
	struct seen s = { 0 };
	struct nlmsgerr e = { .error = -ENOBUFS };
	struct nlmsghdr *nh = msg_begin(&d, NLMSG_ERROR);

	(void)state;
	msg_put(nh, &e, sizeof(e));
	msg_end(&d, nh);
	assert_int_equal(gw_ifaddr_parse(d.buf, d.len, record, &s), -ENOBUFS);
}

static struct sockaddr_storage ip(const char *text, uint32_t scope)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(text, ':')) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
		in6->sin6_scope_id = scope;
		in6->sin6_port = htons(3260);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, text, &in->sin_addr), 1);
		in->sin_port = htons(3260);
	}
	return ss;
}

static void test_same_ip(void **state)
{
	struct sockaddr_storage a = ip("10.34.0.100", 0), b = ip("10.34.0.100", 0);
	struct sockaddr_storage c = ip("10.34.0.101", 0), v6 = ip("fe80::1", 2);
	struct sockaddr_storage v6b = ip("fe80::1", 3), v6any = ip("fe80::1", 0);

	(void)state;
	((struct sockaddr_in *)&b)->sin_port = 0; /* ports do not matter */
	assert_true(gw_sockaddr_same_ip(&a, &b));
	assert_false(gw_sockaddr_same_ip(&a, &c));
	assert_false(gw_sockaddr_same_ip(&a, &v6));
	assert_false(gw_sockaddr_same_ip(&v6, &v6b)); /* link-local on another interface */
	assert_true(gw_sockaddr_same_ip(&v6, &v6any));
}

static void test_is_any(void **state)
{
	struct sockaddr_storage a = ip("0.0.0.0", 0), b = ip("::", 0), c = ip("10.0.0.1", 0);

	(void)state;
	assert_true(gw_sockaddr_is_any(&a));
	assert_true(gw_sockaddr_is_any(&b));
	assert_false(gw_sockaddr_is_any(&c));
}

static void test_errors_that_wait(void **state)
{
	(void)state;
	/* the address is not here yet (TCP and RDMA CM), no RDMA device, the port still taken */
	assert_true(gw_portal_error_waits(-EADDRNOTAVAIL));
	assert_true(gw_portal_error_waits(-ENODEV));
	assert_true(gw_portal_error_waits(-EADDRINUSE));
	/* what no retry can fix fails the start as before */
	assert_false(gw_portal_error_waits(-EINVAL));
	assert_false(gw_portal_error_waits(-ENOMEM));
	assert_false(gw_portal_error_waits(-EACCES));
	assert_false(gw_portal_error_waits(-EPROTONOSUPPORT));
	assert_false(gw_portal_error_waits(0));
}

static void test_backoff(void **state)
{
	uint32_t ms = 0, steps[8];

	(void)state;
	for (int i = 0; i < 8; i++)
		steps[i] = ms = gw_portal_backoff_next(ms);
	assert_int_equal(steps[0], GW_PORTAL_RETRY_MIN_MS);
	assert_int_equal(steps[1], 2 * GW_PORTAL_RETRY_MIN_MS);
	assert_int_equal(steps[2], 4 * GW_PORTAL_RETRY_MIN_MS);
	for (int i = 1; i < 8; i++)
		assert_true(steps[i] >= steps[i - 1]);
	assert_int_equal(steps[7], GW_PORTAL_RETRY_MAX_MS);
	assert_int_equal(gw_portal_backoff_next(GW_PORTAL_RETRY_MAX_MS), GW_PORTAL_RETRY_MAX_MS);
	assert_int_equal(gw_portal_backoff_next(1500), GW_PORTAL_RETRY_MAX_MS);
	assert_string_equal(gw_portal_state_name(GW_PORTAL_LISTENING), "listening");
	assert_string_equal(gw_portal_state_name(GW_PORTAL_WAITING), "waiting");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_new_and_del),
		cmocka_unit_test(test_parse_ipv4_prefers_local),
		cmocka_unit_test(test_parse_link_local_scope),
		cmocka_unit_test(test_parse_skips_other_messages),
		cmocka_unit_test(test_parse_truncated),
		cmocka_unit_test(test_parse_overrun),
		cmocka_unit_test(test_same_ip),
		cmocka_unit_test(test_is_any),
		cmocka_unit_test(test_errors_that_wait),
		cmocka_unit_test(test_backoff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
