// LINK: isergw_gw
// SOURCES: ../common/fake_dm.c ../common/fake_gw.c ../common/fake_ini.c
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the connection of core/conn.c: its PDU receive state
 * machine (iscsi_conn_rx_stream: header, AHS, header digest, data segment,
 * padding, data digest) and its teardown. The real core runs with only its
 * neighbours faked: the datamover (tests/common/fake_dm.c, which hands the
 * core the bytes as tcp.c does and "writes" what it sends) and the gateway
 * around it (fake_gw.c: one reactor polled by the test, two memory LUs).
 *
 * A stream of PDUs split at every byte boundary gives the same answers as
 * in one piece, with digests off and on; damaged digests, lengths beyond
 * MaxRecvDataSegmentLength, an AHS where none may be and one running past
 * TotalAHSLength are answered as RFC 7143 says (Reject, drop); a connection torn down with tasks in every
 * state (in the backstore, waiting for Data-Out, waiting behind a CmdSN
 * gap, waiting for a task buffer) frees everything (the ASan tree checks).
 * max_logins_per_address refuses the connections from one address (an IPv6
 * /64) beyond it while they log in, and only then.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "fake_dm.h"
#include "fake_gw.h"
#include "fake_ini.h"

#define BUF_MAX (2u * 1024u * 1024u)

static uint8_t wire[BUF_MAX];

/* a NOP-Out ping with 13 bytes of data (3 bytes of padding) */
static size_t put_ping(struct fake_ini *ini, uint8_t *out, size_t cap, uint32_t itt)
{
	static const char ping[] = "hello, target";
	struct iscsi_bhs bhs;

	fake_ini_nop_out(&bhs, itt, fake_ini_cmd_sn(ini, true), sizeof(ping) - 1);
	return fake_ini_encode(ini, &bhs, NULL, ping, sizeof(ping) - 1, false, false, out, cap);
}

/* a TEST UNIT READY carrying an AHS (a bidirectional read length: 8 bytes) */
static size_t put_tur_ahs(struct fake_ini *ini, uint8_t *out, size_t cap, uint32_t itt)
{
	uint8_t ahs[8] = { 0, 5, ISCSI_AHS_BIDI_READ_LEN, 0, 0, 0, 0, 0 };
	uint8_t cdb[16] = { 0 };
	struct iscsi_bhs bhs;

	fake_ini_scsi_cmd(&bhs, itt, fake_ini_cmd_sn(ini, false), false, 0, cdb, 6,
			  ISCSI_FLAG_FINAL, 0, 0);
	bhs.total_ahs_len = sizeof(ahs) / 4;
	return fake_ini_encode(ini, &bhs, ahs, NULL, 0, false, false, out, cap);
}

static void assert_ping_answer(const struct fake_ini *ini, int i, uint32_t itt)
{
	assert_true(i >= 0);
	assert_int_equal(be32toh(ini->rx[i].bhs.itt), itt);
	assert_int_equal(ini->rx[i].dlen, 13);
	assert_memory_equal(ini->rx[i].data, "hello, target", 13);
}

static void login_digests(struct fake_ini *ini, int mode)
{
	struct fake_ini_opts o = { .hd = mode & 1, .dd = mode & 2 };

	fake_ini_gw();
	fake_ini_login(ini, &o);
}

/* One NOP-Out, one command with an AHS, one NOP-Out: each mode of digests. */
static void test_stream_whole(void **state)
{
	(void)state;
	for (int mode = 0; mode < 4; mode++) {
		struct fake_ini ini;
		size_t len = 0;

		login_digests(&ini, mode);
		len += put_ping(&ini, wire + len, sizeof(wire) - len, 0x10);
		len += put_tur_ahs(&ini, wire + len, sizeof(wire) - len, 0x11);
		len += put_ping(&ini, wire + len, sizeof(wire) - len, 0x12);
		fake_ini_feed(&ini, wire, len);
		assert_false(fake_ini_closed(&ini));
		assert_int_equal(ini.nrx, 3);
		assert_ping_answer(&ini, fake_ini_find(&ini, 0, ISCSI_OP_NOP_IN, 0x10), 0x10);
		assert_ping_answer(&ini, fake_ini_find(&ini, 0, ISCSI_OP_NOP_IN, 0x12), 0x12);
		assert_true(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x11) >= 0);
		fake_ini_logout_free(&ini);
	}
}

/*
 * The same stream cut in two at every byte: nothing is answered before a
 * PDU is complete, each PDU is answered once when its last byte comes, in
 * order. Then byte by byte.
 */
static void test_stream_split_every_byte(void **state)
{
	(void)state;
	for (int mode = 0; mode < 4; mode++) {
		struct fake_ini ini;
		size_t ends[3], len = 0;

		login_digests(&ini, mode);
		len += put_ping(&ini, wire + len, sizeof(wire) - len, 0x20);
		ends[0] = len;
		len += put_tur_ahs(&ini, wire + len, sizeof(wire) - len, 0x21);
		ends[1] = len;
		len += put_ping(&ini, wire + len, sizeof(wire) - len, 0x22);
		ends[2] = len;
		fake_ini_logout_free(&ini);

		for (size_t cut = 1; cut < len; cut++) {
			size_t whole = 0;

			login_digests(&ini, mode);
			(void)fake_ini_cmd_sn(&ini, false); /* the TUR's, as when encoded */
			for (int k = 0; k < 3; k++)
				whole += ends[k] <= cut;
			fake_ini_feed(&ini, wire, cut);
			assert_false(fake_ini_closed(&ini));
			assert_int_equal(ini.nrx, whole);
			fake_ini_feed(&ini, wire + cut, len - cut);
			assert_false(fake_ini_closed(&ini));
			assert_int_equal(ini.nrx, 3);
			assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_NOP_IN, 0x20), 0);
			assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x21), 1);
			assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_NOP_IN, 0x22), 2);
			assert_ping_answer(&ini, 2, 0x22);
			fake_ini_logout_free(&ini);
		}

		login_digests(&ini, mode);
		for (size_t i = 0; i < len; i++) {
			fake_ini_feed(&ini, wire + i, 1);
			assert_int_equal(ini.nrx, (i + 1 >= ends[0]) + (i + 1 >= ends[1]) +
							  (i + 1 >= ends[2]));
		}
		assert_ping_answer(&ini, 2, 0x22);
		fake_ini_logout_free(&ini);
	}
}

/* A header digest that does not match ends the connection (ErrorRecoveryLevel 0). */
static void test_header_digest_error(void **state)
{
	struct fake_ini_opts o = { .hd = true };
	struct fake_ini ini;
	struct iscsi_bhs bhs;
	uint64_t drops;
	size_t len;

	(void)state;
	fake_ini_gw();
	fake_ini_login(&ini, &o);
	drops = atomic_load(&ini.g->gw->stats.conn_drops);
	fake_ini_nop_out(&bhs, 0x30, fake_ini_cmd_sn(&ini, true), 0);
	len = fake_ini_encode(&ini, &bhs, NULL, NULL, 0, true, false, wire, sizeof(wire));
	fake_ini_feed(&ini, wire, len);
	assert_true(fake_ini_closed(&ini));
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_NOP_IN, ~0u), -1);
	assert_int_equal(atomic_load(&ini.g->gw->stats.conn_drops), drops + 1);
	fake_ini_logout_free(&ini);
}

/* A data digest that does not match: Reject (reason 02h), the PDU is discarded, the
 * connection goes on. */
static void test_data_digest_error(void **state)
{
	struct fake_ini_opts o = { .dd = true };
	struct fake_ini ini;
	struct iscsi_bhs bhs;
	size_t len;
	int i;

	(void)state;
	fake_ini_gw();
	fake_ini_login(&ini, &o);
	fake_ini_nop_out(&bhs, 0x31, fake_ini_cmd_sn(&ini, true), 5);
	len = fake_ini_encode(&ini, &bhs, NULL, "abcde", 5, false, true, wire, sizeof(wire));
	len += put_ping(&ini, wire + len, sizeof(wire) - len, 0x32);
	fake_ini_feed(&ini, wire, len);
	assert_false(fake_ini_closed(&ini));
	assert_int_equal(ini.nrx, 2);
	i = fake_ini_find(&ini, 0, ISCSI_OP_REJECT, ~0u);
	assert_int_equal(i, 0);
	assert_int_equal(((struct iscsi_reject *)&ini.rx[i].bhs)->reason, ISCSI_REJECT_DATA_DIGEST);
	assert_int_equal(ini.rx[i].dlen, ISCSI_BHS_LEN);
	assert_int_equal(be32toh(((struct iscsi_bhs *)ini.rx[i].data)->itt), 0x31);
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_NOP_IN, 0x31), -1);
	assert_ping_answer(&ini, fake_ini_find(&ini, 0, ISCSI_OP_NOP_IN, 0x32), 0x32);
	fake_ini_logout_free(&ini);
}

/* The lines of stderr written while fn(ini) ran, which contain what. */
static int log_lines_while(struct fake_ini *ini, void (*fn)(struct fake_ini *), const char *what)
{
	char tmpl[] = "/tmp/test_conn.XXXXXX", line[1024];
	int fd = mkstemp(tmpl), saved, n = 0;
	FILE *f;

	assert_true(fd >= 0);
	unlink(tmpl);
	fflush(stderr);
	saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	fn(ini);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	f = fdopen(fd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

#define FLOOD 100u

/* FLOOD NOP-Outs with a bad data digest, one read */
static void send_bad_digests(struct fake_ini *ini)
{
	struct iscsi_bhs bhs;
	size_t len = 0;

	for (uint32_t k = 0; k < FLOOD; k++) {
		fake_ini_nop_out(&bhs, 0x100 + k, fake_ini_cmd_sn(ini, true), 5);
		len += fake_ini_encode(ini, &bhs, NULL, "abcde", 5, false, true, wire + len,
				       sizeof(wire) - len);
	}
	fake_ini_feed(ini, wire, len);
}

/*
 * An initiator that sends bad PDUs in a loop: every one is answered (a
 * Reject each), but the log gets ISCSI_CONN_LOG_LINES lines of them, then
 * one line counting the others when the connection ends.
 */
static void test_reject_flood_log(void **state)
{
	struct fake_ini_opts o = { .dd = true };
	enum gw_log_level level = gw_log_get_level();
	struct fake_ini ini;
	int lines;

	(void)state;
	gw_log_set_level(GW_LOG_NOTICE);
	fake_ini_gw();
	fake_ini_login(&ini, &o);
	lines = log_lines_while(&ini, send_bad_digests, "rejecting NOP-Out");
	assert_false(fake_ini_closed(&ini));
	assert_int_equal(ini.nrx, FLOOD);
	for (uint32_t k = 0; k < FLOOD; k++)
		assert_int_equal(iscsi_bhs_opcode(&ini.rx[k].bhs), ISCSI_OP_REJECT);
	assert_int_equal(lines, ISCSI_CONN_LOG_LINES);
	lines = log_lines_while(&ini, fake_ini_logout_free,
				"90 more lines about its PDUs not written before it closed");
	assert_int_equal(lines, 1);
	gw_log_set_level(level);
}

static struct fake_gw *raw_gw;

/* A connection straight from the datamover, still in the login phase: 0 or -errno. */
static int raw_connect(const char *peer, struct fake_dm **d)
{
	struct iscsi_conn *c;

	fake_dm_set_peer(peer);
	return fake_dm_connect(raw_gw->portal, raw_gw->r, d, &c);
}

static void raw_close(struct fake_dm *d)
{
	fake_dm_hangup(d);
	fake_gw_poll(raw_gw);
	assert_true(fake_dm_closed(d));
	fake_dm_free(d);
}

static struct fake_dm *flood[20];

/* 20 more connections from 192.0.2.7 while two are logging in: all refused */
static void refuse_flood(struct fake_ini *ini)
{
	(void)ini;
	for (size_t k = 0; k < 20; k++)
		assert_int_equal(raw_connect("192.0.2.7:41000", &flood[k]), -EBUSY);
}

/*
 * max_logins_per_address: connections from one address (an IPv6 /64) in the
 * login phase at once. The next is refused (-EBUSY: the datamover closes
 * it) with a warn line, 10 every 10 s; a connection stops counting when its
 * login completes or it closes.
 */
static void test_logins_per_address(void **state)
{
	struct fake_gw *g = fake_ini_gw();
	struct fake_ini_opts o = { 0 };
	struct fake_ini ini[3];
	struct fake_dm *a[2], *b, *v6[3], *x;
	uint32_t saved = g->gw->cfg->max_logins_per_address;
	uint64_t refused = gw_login_slots_refused(&g->gw->login_slots);
	enum gw_log_level level = gw_log_get_level();
	int lines;

	(void)state;
	raw_gw = g;
	assert_int_equal(saved, 64);            /* the default */
	g->gw->cfg->max_logins_per_address = 2;
	assert_int_equal(raw_connect("192.0.2.7:40000", &a[0]), 0);
	assert_int_equal(raw_connect("192.0.2.7:40001", &a[1]), 0);
	assert_int_equal(raw_connect("192.0.2.7:40002", &x), -EBUSY);
	assert_int_equal(gw_login_slots_refused(&g->gw->login_slots), refused + 1);
	/* another address has its own count */
	assert_int_equal(raw_connect("192.0.2.8:40000", &b), 0);
	/* an IPv6 /64 is one host: 2001:db8::/64 has two, 2001:db8:0:1::/64 none */
	assert_int_equal(raw_connect("[2001:db8::1]:40000", &v6[0]), 0);
	assert_int_equal(raw_connect("[2001:db8::ffff:2]:40000", &v6[1]), 0);
	assert_int_equal(raw_connect("[2001:db8::3]:40000", &x), -EBUSY);
	assert_int_equal(raw_connect("[2001:db8:0:1::1]:40000", &v6[2]), 0);
	/* a flood is logged 10 times in 10 s, not 20 */
	gw_log_set_level(GW_LOG_NOTICE);
	lines = log_lines_while(NULL, refuse_flood,
				"connections from this address are logging in already");
	gw_log_set_level(level);
	assert_int_equal(lines, 8);             /* 2 of the window's 10 went above */
	/* one closes: room for one more */
	raw_close(a[0]);
	assert_int_equal(raw_connect("192.0.2.7:40003", &a[0]), 0);
	raw_close(a[0]);
	raw_close(a[1]);
	raw_close(b);
	for (size_t k = 0; k < 3; k++)
		raw_close(v6[k]);
	/* sessions do not count: three log in from one address, then two more connect */
	fake_dm_set_peer("192.0.2.9:40000");
	for (uint8_t k = 0; k < 3; k++) {
		o.isid_no = (uint8_t)(k + 1);
		fake_ini_login(&ini[k], &o);
	}
	assert_int_equal(raw_connect("192.0.2.9:40001", &a[0]), 0);
	assert_int_equal(raw_connect("192.0.2.9:40002", &a[1]), 0);
	assert_int_equal(raw_connect("192.0.2.9:40003", &x), -EBUSY);
	raw_close(a[0]);
	raw_close(a[1]);
	for (size_t k = 0; k < 3; k++)
		fake_ini_logout_free(&ini[k]);
	/* nothing is left counted: two connect again from each address */
	for (size_t k = 0; k < 2; k++)
		assert_int_equal(raw_connect("192.0.2.9:40004", &a[k]), 0);
	raw_close(a[0]);
	raw_close(a[1]);
	fake_dm_set_peer(NULL);
	g->gw->cfg->max_logins_per_address = saved;
	assert_int_equal(atomic_load(&g->gw->stats.connections), 0);
}

/* The keys: an IPv4 address, an IPv6 address's /64, no address at all. */
static void test_login_key(void **state)
{
	uint8_t k1[GW_LOGIN_KEY_LEN], k2[GW_LOGIN_KEY_LEN];

	(void)state;
	assert_true(gw_login_key("10.1.2.3:3260", k1));
	assert_true(gw_login_key("10.1.2.3:1", k2));
	assert_memory_equal(k1, k2, sizeof(k1));
	assert_true(gw_login_key("10.1.2.4:3260", k2));
	assert_memory_not_equal(k1, k2, sizeof(k1));
	assert_true(gw_login_key("[::ffff:10.1.2.3]:5", k2));
	assert_memory_equal(k1, k2, sizeof(k1));        /* IPv4-mapped: the IPv4 host */
	assert_true(gw_login_key("[fe80::1:2:3:4]:1", k1));
	assert_true(gw_login_key("[fe80::9]:2", k2));
	assert_memory_equal(k1, k2, sizeof(k1));
	assert_true(gw_login_key("[fe80:0:0:1::9]:2", k2));
	assert_memory_not_equal(k1, k2, sizeof(k1));
	assert_false(gw_login_key("fake-initiator:1", k1));
	assert_false(gw_login_key("unknown", k1));
	assert_false(gw_login_key("[::1", k1));
	assert_false(gw_login_key("[]:1", k1));
	assert_false(gw_login_key("[0123456789abcdef0123456789abcdef0123456789abcdef]:1", k1));
	assert_false(gw_login_key("1.2.3.4.5:1", k1));
	assert_false(gw_login_key("", k1));
}

/*
 * DataSegmentLength beyond the target's MaxRecvDataSegmentLength: Reject and
 * drop as soon as the header is there (the data is never awaited); exactly
 * at the limit it is served.
 */
static void test_dsl_beyond_limit(void **state)
{
	struct fake_ini_opts o = { .target_mrdsl = 8192 };
	static uint8_t data[8196];
	struct fake_ini ini;
	struct iscsi_bhs bhs;
	size_t len;

	(void)state;
	memset(data, 0x5a, sizeof(data));
	fake_ini_gw();
	fake_ini_login(&ini, &o);
	/* at the limit: answered (the reply is cut to what the initiator takes) */
	fake_ini_nop_out(&bhs, 0x40, fake_ini_cmd_sn(&ini, true), 8192);
	fake_ini_send(&ini, &bhs, data, 8192);
	assert_false(fake_ini_closed(&ini));
	assert_true(fake_ini_find(&ini, 0, ISCSI_OP_NOP_IN, 0x40) >= 0);
	fake_ini_clear(&ini);

	/* 4 bytes beyond: only the header goes */
	fake_ini_nop_out(&bhs, 0x41, fake_ini_cmd_sn(&ini, true), 8196);
	len = fake_ini_encode(&ini, &bhs, NULL, data, 8196, false, false, wire, sizeof(wire));
	fake_ini_feed(&ini, wire, ISCSI_BHS_LEN);
	assert_true(fake_ini_closed(&ini));
	assert_int_equal(ini.nrx, 1);
	assert_int_equal(iscsi_bhs_opcode(&ini.rx[0].bhs), ISCSI_OP_REJECT);
	assert_int_equal(((struct iscsi_reject *)&ini.rx[0].bhs)->reason,
			 ISCSI_REJECT_PROTOCOL_ERROR);
	(void)len;
	fake_ini_logout_free(&ini);
}

/* An AHS on a PDU other than a SCSI command: Reject, the connection goes on. */
static void test_ahs_where_none_may_be(void **state)
{
	uint8_t ahs[8] = { 0, 5, ISCSI_AHS_BIDI_READ_LEN, 0, 0, 0, 0, 0 };
	struct fake_ini ini;
	struct iscsi_bhs bhs;
	size_t len;

	(void)state;
	fake_ini_gw();
	fake_ini_login(&ini, NULL);
	fake_ini_nop_out(&bhs, 0x50, fake_ini_cmd_sn(&ini, true), 0);
	bhs.total_ahs_len = 2;
	len = fake_ini_encode(&ini, &bhs, ahs, NULL, 0, false, false, wire, sizeof(wire));
	len += put_ping(&ini, wire + len, sizeof(wire) - len, 0x51);
	fake_ini_feed(&ini, wire, len);
	assert_false(fake_ini_closed(&ini));
	assert_int_equal(ini.nrx, 2);
	assert_int_equal(iscsi_bhs_opcode(&ini.rx[0].bhs), ISCSI_OP_REJECT);
	assert_ping_answer(&ini, 1, 0x51);
	fake_ini_logout_free(&ini);
}

/*
 * An AHS whose own length runs past TotalAHSLength: the command is
 * rejected (protocol error), its CmdSN used (the next command runs), the
 * connection goes on.
 */
static void test_ahs_bad_length(void **state)
{
	uint8_t ahs[8] = { 0, 9, ISCSI_AHS_BIDI_READ_LEN, 0, 0, 0, 0, 0 };
	uint8_t cdb[16] = { 0 };
	struct fake_ini ini;
	struct iscsi_bhs bhs;
	size_t len;

	(void)state;
	fake_ini_gw();
	fake_ini_login(&ini, NULL);
	fake_ini_scsi_cmd(&bhs, 0x58, fake_ini_cmd_sn(&ini, false), false, 0, cdb, 6,
			  ISCSI_FLAG_FINAL, 0, 0);
	bhs.total_ahs_len = sizeof(ahs) / 4;
	len = fake_ini_encode(&ini, &bhs, ahs, NULL, 0, false, false, wire, sizeof(wire));
	len += put_tur_ahs(&ini, wire + len, sizeof(wire) - len, 0x59);
	fake_ini_feed(&ini, wire, len);
	assert_false(fake_ini_closed(&ini));
	assert_int_equal(ini.nrx, 2);
	assert_int_equal(iscsi_bhs_opcode(&ini.rx[0].bhs), ISCSI_OP_REJECT);
	assert_int_equal(((struct iscsi_reject *)&ini.rx[0].bhs)->reason,
			 ISCSI_REJECT_PROTOCOL_ERROR);
	assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, 0x59), 1);
	fake_ini_logout_free(&ini);
}

/*
 * Torn down with tasks in every state: a READ and a WRITE in the backstore
 * (held), a WRITE waiting for its Data-Out (an R2T out), a command waiting
 * behind a CmdSN gap, a WRITE waiting for a task buffer (more than the fake
 * datamover's pool is in use). The initiator hangs up; once the backstore
 * lets its I/O go, the connection, the session and every task are gone
 * (fake_ini_logout_free checks the connection, the ASan tree the rest).
 */
static void test_teardown_with_tasks(void **state)
{
	struct fake_ini_opts o = { .queue_depth = 64 };
	static uint8_t data[4096];
	uint8_t cdb[16];
	struct fake_ini ini;
	struct iscsi_bhs bhs;
	int mode;

	(void)state;
	for (mode = 0; mode < 2; mode++) {
		fake_ini_gw();
		fake_ini_login(&ini, &o);
		fake_gw_hold_io(ini.g, true);
		/* a READ of 8 blocks, held in the backstore */
		fake_ini_rw10(cdb, false, 0, 8);
		fake_ini_scsi_cmd(&bhs, 0x60, fake_ini_cmd_sn(&ini, false), false, 0, cdb, 10,
				  ISCSI_FLAG_FINAL | ISCSI_CMD_READ, 4096, 0);
		fake_ini_send(&ini, &bhs, NULL, 0);
		/* a WRITE with all its data immediate, held in the backstore */
		fake_ini_rw10(cdb, true, 16, 8);
		fake_ini_scsi_cmd(&bhs, 0x61, fake_ini_cmd_sn(&ini, false), false, 0, cdb, 10,
				  ISCSI_FLAG_FINAL | ISCSI_CMD_WRITE, 4096, 4096);
		fake_ini_send(&ini, &bhs, data, 4096);
		/* a WRITE of 128 KiB with 4 KiB immediate: waits for the rest (R2T) */
		fake_ini_rw10(cdb, true, 32, 256);
		fake_ini_scsi_cmd(&bhs, 0x62, fake_ini_cmd_sn(&ini, false), false, 0, cdb, 10,
				  ISCSI_FLAG_FINAL | ISCSI_CMD_WRITE, 131072, 4096);
		fake_ini_send(&ini, &bhs, data, 4096);
		assert_true(fake_ini_find(&ini, 0, ISCSI_OP_R2T, 0x62) >= 0);
		/* a gap: CmdSN n is never sent, n + 1 waits */
		(void)fake_ini_cmd_sn(&ini, false);
		fake_ini_rw10(cdb, false, 8, 1);
		fake_ini_scsi_cmd(&bhs, 0x63, fake_ini_cmd_sn(&ini, false), false, 1, cdb, 10,
				  ISCSI_FLAG_FINAL | ISCSI_CMD_READ, 4096, 0);
		fake_ini_send(&ini, &bhs, NULL, 0);
		/* 1 MiB of READ waiting for a task buffer (the pool is 1 MiB) */
		fake_ini_rw10(cdb, false, 0, 2048);
		fake_ini_scsi_cmd(&bhs, 0x64, fake_ini_cmd_sn(&ini, true), true, 1, cdb, 10,
				  ISCSI_FLAG_FINAL | ISCSI_CMD_READ, 1u << 20, 0);
		fake_ini_send(&ini, &bhs, NULL, 0);
		assert_int_equal(fake_ini_find(&ini, 0, ISCSI_OP_SCSI_RSP, ~0u), -1);
		assert_int_equal(ini.c->ntasks, 5);
		assert_false(fake_ini_closed(&ini));
		if (mode == 0) {
			/* the initiator hangs up (fake_ini_logout_free), I/O still held */
			fake_ini_logout_free(&ini);
		} else {
			/* the target drops it: a header beyond MaxRecvDataSegmentLength */
			fake_ini_nop_out(&bhs, 0x65, fake_ini_cmd_sn(&ini, true), 0xffffff);
			fake_ini_feed(&ini, &bhs, sizeof(bhs));
			assert_true(fake_ini_closed(&ini));
			fake_ini_logout_free(&ini);
		}
		assert_int_equal(atomic_load(&fake_ini_gw()->gw->stats.connections), 0);
		assert_true(list_empty(&fake_ini_gw()->gw->sessions));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_whole),
		cmocka_unit_test(test_stream_split_every_byte),
		cmocka_unit_test(test_header_digest_error),
		cmocka_unit_test(test_data_digest_error),
		cmocka_unit_test(test_reject_flood_log),
		cmocka_unit_test(test_dsl_beyond_limit),
		cmocka_unit_test(test_ahs_where_none_may_be),
		cmocka_unit_test(test_ahs_bad_length),
		cmocka_unit_test(test_teardown_with_tasks),
		cmocka_unit_test(test_logins_per_address),
		cmocka_unit_test(test_login_key),
	};

	fake_ini_log_level();
	return cmocka_run_group_tests(tests, NULL, fake_ini_group_teardown);
}
