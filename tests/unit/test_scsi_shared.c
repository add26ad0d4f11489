// LINK: gw_scsi gw_backend isergw_config isergw_common
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The LU control state shared between gateway nodes (scsi_shared.c): two
 * "nodes" in one process, each its own scsi_lu over the same state file (as
 * two isergwd would map it), node A's nexuses through target port 1, node
 * B's through port 2. Registrations and reservations made on one node are
 * enforced and reported on the other; resets, CLEAR and PREEMPT AND ABORT
 * reach the other node's nexuses as unit attentions and aborts (on its next
 * command, or from the periodic poll when idle); a node alone powers the LU
 * on (non-APTPL state cleared); a corrupt, short or foreign file is refused.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "test_scsi_harness.h"
#include "scsi/scsi_shared.h"

#define MB (1024ull * 1024)

/* persistent reservation types */
#define PR_TYPE_WE      0x1
#define PR_TYPE_EA      0x3
#define PR_TYPE_WE_RO   0x5
#define PR_TYPE_WE_AR   0x7

static char g_dir[64];
static char g_path[128];

/* What the core's abort handler was asked. */
static struct {
	int n;
	struct scsi_lu *lu[16];
	bool every[16];
	char iport[16][256];
	uint16_t rel[16];
} ab;

static void rec_abort(struct scsi_lu *lu, const char *iport, uint16_t rel, void *arg)
{
	(void)arg;
	if (ab.n >= 16)
		return;
	ab.lu[ab.n] = lu;
	ab.every[ab.n] = iport == NULL;
	snprintf(ab.iport[ab.n], sizeof(ab.iport[0]), "%s", iport ? iport : "");
	ab.rel[ab.n] = rel;
	ab.n++;
}

struct two {
	struct tctx a;  /* node A: nexuses a (host-a) and b (host-b) through port 1 */
	struct tctx b;  /* node B: the same initiator ports through port 2 */
};

static struct scsi_lu_params shared_params(void)
{
	struct scsi_lu_params p = default_params();

	snprintf(p.shared_path, sizeof(p.shared_path), "%s", g_path);
	return p;
}

static int node_open(struct tctx *x, const struct scsi_port *port)
{
	struct scsi_lu_params p = shared_params();
	int rc;

	memset(x, 0, sizeof(*x));
	x->mem = mem_create(4 * MB, 512);
	rc = scsi_lu_create(&p, &x->mem->b, &x->lu);
	if (rc) {
		mem_destroy(x->mem);
		return rc;
	}
	x->luns[0] = x->lu;
	itn_init(&x->a, 1, "iqn.2026-01.org.example:host-a", "400001370000", port, x->luns, 1);
	itn_init(&x->b, 2, "iqn.2026-01.org.example:host-b", "400001370001", port, x->luns, 1);
	scsi_lu_itn_add(x->lu, &x->a);
	scsi_lu_itn_add(x->lu, &x->b);
	return 0;
}

static void node_close(struct tctx *x)
{
	tctx_teardown(x);
}

static int setup(void **state)
{
	struct two *t = calloc(1, sizeof(*t));

	snprintf(g_dir, sizeof(g_dir), "/tmp/isergw-shared-XXXXXX");
	assert_non_null(mkdtemp(g_dir));
	snprintf(g_path, sizeof(g_path), "%s/lu.state", g_dir);
	assert_int_equal(node_open(&t->a, &test_port1), 0);
	assert_int_equal(node_open(&t->b, &test_port2), 0);
	memset(&ab, 0, sizeof(ab));
	scsi_set_abort_nexus_handler(rec_abort, NULL);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct two *t = *state;

	if (t->a.lu)
		node_close(&t->a);
	if (t->b.lu)
		node_close(&t->b);
	unlink(g_path);
	rmdir(g_dir);
	free(t);
	scsi_set_abort_nexus_handler(NULL, NULL);
	return 0;
}

/* ------------------------------------------------------------- commands */

static uint8_t prout(struct tctx *x, const struct scsi_itn *itn, uint8_t sa, uint8_t type,
		     uint64_t rk, uint64_t sark, uint8_t flags)
{
	uint8_t c[16] = { 0 }, p[24] = { 0 };
	int i;

	c[0] = 0x5f;
	c[1] = sa;
	c[2] = type;
	c[8] = 24;
	for (i = 0; i < 8; i++) {
		p[i] = (uint8_t)(rk >> (56 - 8 * i));
		p[8 + i] = (uint8_t)(sark >> (56 - 8 * i));
	}
	p[20] = flags;
	return run_cdb(x, itn, c, 10, p, sizeof(p));
}

/* READ KEYS: returns the number of keys, *gen the PRgeneration, keys[] the keys. */
static unsigned int read_keys(struct tctx *x, const struct scsi_itn *itn, uint32_t *gen,
			      uint64_t *keys)
{
	uint8_t c[16] = { 0x5e, 0x00 }, d[512];
	unsigned int n, i;

	c[7] = 0x02;
	memset(d, 0, sizeof(d));
	assert_int_equal(run_cdb(x, itn, c, 10, d, sizeof(d)), SCSI_STATUS_GOOD);
	if (gen)
		*gen = be32(d);
	n = be32(&d[4]) / 8;
	for (i = 0; keys && i < n; i++)
		keys[i] = be64(&d[8 + 8 * i]);
	return n;
}

/* READ RESERVATION: the type, 0 if none. */
static uint8_t read_resv(struct tctx *x, const struct scsi_itn *itn, uint64_t *key)
{
	uint8_t c[16] = { 0x5e, 0x01 }, d[64];

	c[8] = sizeof(d);
	memset(d, 0, sizeof(d));
	assert_int_equal(run_cdb(x, itn, c, 10, d, sizeof(d)), SCSI_STATUS_GOOD);
	if (be32(&d[4]) == 0)
		return 0;
	if (key)
		*key = be64(&d[8]);
	return d[21] & 0x0f;
}

/* Next command's status must be CHECK CONDITION UNIT ATTENTION asc. */
static void expect_ua(struct tctx *x, const struct scsi_itn *itn, uint16_t asc)
{
	assert_int_equal(run_tur(x, itn), SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(sense_key(x), SCSI_SK_UNIT_ATTENTION);
	assert_int_equal(sense_asc(x), asc);
}

/* ----------------------------------------------------------------- tests */

static void t_registration_visible(void **state)
{
	struct two *t = *state;
	uint64_t keys[4];
	uint32_t gen;

	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0, 0xa1, 0), SCSI_STATUS_GOOD);
	assert_int_equal(read_keys(&t->b, &t->b.b, &gen, keys), 1);
	assert_int_equal(keys[0], 0xa1);
	assert_int_equal(gen, 1);
	assert_int_equal(prout(&t->b, &t->b.b, 0x00, 0, 0, 0xb2, 0), SCSI_STATUS_GOOD);
	assert_int_equal(read_keys(&t->a, &t->a.b, &gen, keys), 2);
	assert_int_equal(keys[0], 0xa1);
	assert_int_equal(keys[1], 0xb2);
	assert_int_equal(gen, 2);
	/* a registration is per nexus: host-a through port 2 is not registered */
	assert_int_equal(prout(&t->b, &t->b.a, 0x01, 3, 0xa1, 0, 0),
			 SCSI_STATUS_RESERVATION_CONFLICT);
	/* the same key through port 1 may unregister it */
	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0xa1, 0, 0), SCSI_STATUS_GOOD);
	assert_int_equal(read_keys(&t->b, &t->b.b, &gen, keys), 1);
	assert_int_equal(keys[0], 0xb2);
}

static void t_reservation_enforced_on_other_node(void **state)
{
	struct two *t = *state;
	uint64_t key = 0;

	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0, 0xa1, 0), SCSI_STATUS_GOOD);
	assert_int_equal(prout(&t->a, &t->a.a, 0x01, PR_TYPE_EA, 0xa1, 0, 0), SCSI_STATUS_GOOD);
	assert_int_equal(read_resv(&t->b, &t->b.b, &key), PR_TYPE_EA);
	assert_int_equal(key, 0xa1);
	assert_int_equal(run_read1(&t->b, &t->b.b), SCSI_STATUS_RESERVATION_CONFLICT);
	assert_int_equal(run_write1(&t->b, &t->b.a), SCSI_STATUS_RESERVATION_CONFLICT);
	assert_int_equal(run_read1(&t->a, &t->a.a), SCSI_STATUS_GOOD);
	/* the holder releases through node A; node B's nexuses may read again */
	assert_int_equal(prout(&t->a, &t->a.a, 0x02, PR_TYPE_EA, 0xa1, 0, 0), SCSI_STATUS_GOOD);
	assert_int_equal(run_read1(&t->b, &t->b.b), SCSI_STATUS_GOOD);
}

static void t_all_registrants_across_nodes(void **state)
{
	struct two *t = *state;

	/* WE-AR: every registrant holds it, whichever node it registered through */
	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0, 0xa1, 0), SCSI_STATUS_GOOD);
	assert_int_equal(prout(&t->b, &t->b.b, 0x00, 0, 0, 0xb2, 0), SCSI_STATUS_GOOD);
	assert_int_equal(prout(&t->a, &t->a.a, 0x01, PR_TYPE_WE_AR, 0xa1, 0, 0),
			 SCSI_STATUS_GOOD);
	assert_int_equal(run_write1(&t->b, &t->b.b), SCSI_STATUS_GOOD);
	assert_int_equal(run_write1(&t->b, &t->b.a), SCSI_STATUS_RESERVATION_CONFLICT);
	/* the reservation lasts until the last registrant goes */
	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0xa1, 0, 0), SCSI_STATUS_GOOD);
	assert_int_equal(read_resv(&t->b, &t->b.b, NULL), PR_TYPE_WE_AR);
	assert_int_equal(prout(&t->b, &t->b.b, 0x00, 0, 0xb2, 0, 0), SCSI_STATUS_GOOD);
	assert_int_equal(read_resv(&t->a, &t->a.a, NULL), 0);
}

static void t_reserve6_across_nodes(void **state)
{
	struct two *t = *state;
	uint8_t c[16] = { 0x16 };

	assert_int_equal(run_cdb(&t->a, &t->a.a, c, 6, NULL, 0), SCSI_STATUS_GOOD);
	assert_int_equal(run_tur(&t->b, &t->b.b), SCSI_STATUS_RESERVATION_CONFLICT);
	assert_int_equal(run_cdb(&t->b, &t->b.b, c, 6, NULL, 0), SCSI_STATUS_RESERVATION_CONFLICT);
	/* the owner's nexus goes away: released for everyone */
	scsi_lu_itn_remove(t->a.lu, &t->a.a);
	assert_int_equal(run_tur(&t->b, &t->b.b), SCSI_STATUS_GOOD);
	scsi_lu_itn_add(t->a.lu, &t->a.a);
	/* and a LOGICAL UNIT RESET through the other node releases it too */
	assert_int_equal(run_cdb(&t->b, &t->b.b, c, 6, NULL, 0), SCSI_STATUS_GOOD);
	assert_int_equal(run_tur(&t->a, &t->a.a), SCSI_STATUS_RESERVATION_CONFLICT);
	scsi_lu_reset(t->a.lu, &t->a.a, SCSI_RESET_LU);
	expect_ua(&t->b, &t->b.b, 0x2903);
	assert_int_equal(run_tur(&t->b, &t->b.b), SCSI_STATUS_GOOD);
	expect_ua(&t->a, &t->a.a, 0x2903);
	assert_int_equal(run_tur(&t->a, &t->a.a), SCSI_STATUS_GOOD);
}

static void t_lu_reset_reaches_other_node(void **state)
{
	struct two *t = *state;

	scsi_lu_reset(t->a.lu, &t->a.a, SCSI_RESET_LU);
	/* the requesting node aborted its own tasks already: nothing asked of it */
	assert_int_equal(ab.n, 0);
	/* every nexus of both nodes gets 29/03 */
	expect_ua(&t->a, &t->a.a, 0x2903);
	expect_ua(&t->a, &t->a.b, 0x2903);
	expect_ua(&t->b, &t->b.a, 0x2903);
	/* node B's first command synced and asked the core to abort every nexus */
	assert_int_equal(ab.n, 1);
	assert_ptr_equal(ab.lu[0], t->b.lu);
	assert_true(ab.every[0]);
	expect_ua(&t->b, &t->b.b, 0x2903);
	assert_int_equal(run_tur(&t->b, &t->b.b), SCSI_STATUS_GOOD);
	assert_int_equal(ab.n, 1);
}

static void t_idle_node_polled(void **state)
{
	struct two *t = *state;

	scsi_lu_reset(t->b.lu, &t->b.b, SCSI_RESET_LU);
	assert_int_equal(ab.n, 0);
	/* no command on node A: the periodic poll applies it */
	scsi_shared_poll();
	assert_int_equal(ab.n, 1);
	assert_ptr_equal(ab.lu[0], t->a.lu);
	assert_true(ab.every[0]);
	scsi_shared_poll();
	assert_int_equal(ab.n, 1);
	expect_ua(&t->a, &t->a.a, 0x2903);
}

static void t_preempt_and_abort_across_nodes(void **state)
{
	struct two *t = *state;
	uint64_t keys[4];

	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0, 0xa1, 0), SCSI_STATUS_GOOD);
	assert_int_equal(prout(&t->b, &t->b.b, 0x00, 0, 0, 0xb2, 0), SCSI_STATUS_GOOD);
	assert_int_equal(prout(&t->b, &t->b.b, 0x01, PR_TYPE_WE, 0xb2, 0, 0), SCSI_STATUS_GOOD);
	/* node A preempts node B's holder and aborts its tasks */
	assert_int_equal(prout(&t->a, &t->a.a, 0x05, PR_TYPE_EA, 0xa1, 0xb2, 0), SCSI_STATUS_GOOD);
	/* node A's own handler call is for host-b through port 2 (none of its sessions) */
	assert_int_equal(ab.n, 1);
	assert_ptr_equal(ab.lu[0], t->a.lu);
	assert_string_equal(ab.iport[0], t->b.b.initiator_port);
	assert_int_equal(ab.rel[0], 2);
	scsi_shared_poll();
	assert_int_equal(ab.n, 2);
	assert_ptr_equal(ab.lu[1], t->b.lu);
	assert_false(ab.every[1]);
	assert_string_equal(ab.iport[1], t->b.b.initiator_port);
	assert_int_equal(ab.rel[1], 2);
	/* the preempted nexus gets 2A/05, and is no longer registered */
	expect_ua(&t->b, &t->b.b, 0x2a05);
	assert_int_equal(run_read1(&t->b, &t->b.b), SCSI_STATUS_RESERVATION_CONFLICT);
	assert_int_equal(read_keys(&t->b, &t->b.a, NULL, keys), 1);
	assert_int_equal(keys[0], 0xa1);
	assert_int_equal(read_resv(&t->b, &t->b.a, NULL), PR_TYPE_EA);
	/* nobody else got a UA */
	assert_int_equal(run_tur(&t->b, &t->b.a), SCSI_STATUS_GOOD);
	assert_int_equal(run_tur(&t->a, &t->a.b), SCSI_STATUS_GOOD);
}

static void t_clear_and_release_uas(void **state)
{
	struct two *t = *state;

	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0, 0xa1, 0), SCSI_STATUS_GOOD);
	assert_int_equal(prout(&t->b, &t->b.b, 0x00, 0, 0, 0xb2, 0), SCSI_STATUS_GOOD);
	assert_int_equal(prout(&t->a, &t->a.a, 0x01, PR_TYPE_WE_RO, 0xa1, 0, 0), SCSI_STATUS_GOOD);
	/* releasing a registrants-only type: 2A/04 to the other registrants */
	assert_int_equal(prout(&t->a, &t->a.a, 0x02, PR_TYPE_WE_RO, 0xa1, 0, 0), SCSI_STATUS_GOOD);
	expect_ua(&t->b, &t->b.b, 0x2a04);
	assert_int_equal(run_tur(&t->a, &t->a.a), SCSI_STATUS_GOOD);
	/* CLEAR through node B: 2A/03 to the registrant on node A */
	assert_int_equal(prout(&t->b, &t->b.b, 0x03, 0, 0xb2, 0, 0), SCSI_STATUS_GOOD);
	expect_ua(&t->a, &t->a.a, 0x2a03);
	assert_int_equal(run_tur(&t->b, &t->b.b), SCSI_STATUS_GOOD);
	assert_int_equal(read_keys(&t->a, &t->a.a, NULL, NULL), 0);
	/* no abort is asked for any of this */
	scsi_shared_poll();
	assert_int_equal(ab.n, 0);
}

static void t_ua_kept_for_logged_out_nexus(void **state)
{
	struct two *t = *state;

	assert_int_equal(prout(&t->b, &t->b.b, 0x00, 0, 0, 0xb2, 0), SCSI_STATUS_GOOD);
	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0, 0xa1, 0), SCSI_STATUS_GOOD);
	/* host-b logs out of node B, then node A preempts its registration */
	scsi_lu_itn_remove(t->b.lu, &t->b.b);
	assert_int_equal(prout(&t->a, &t->a.a, 0x04, PR_TYPE_WE, 0xa1, 0xb2, 0),
			 SCSI_STATUS_GOOD);
	scsi_shared_poll();
	/* it logs in again through the same port: the UA waited for it */
	scsi_lu_itn_add(t->b.lu, &t->b.b);
	expect_ua(&t->b, &t->b.b, 0x2a05);
}

static void t_mode_select_shared(void **state)
{
	struct two *t = *state;
	uint8_t c[16] = { 0x15, 0x10 }, p[4 + 20];
	uint8_t s[16] = { 0x1a, 0x00, 0x08 }, d[64];

	/* MODE SELECT(6) through node A: caching page with WCE=0 */
	memset(p, 0, sizeof(p));
	p[4] = 0x08;
	p[5] = 0x12;
	c[4] = sizeof(p);
	assert_int_equal(run_cdb(&t->a, &t->a.a, c, 6, p, sizeof(p)), SCSI_STATUS_GOOD);
	/* node B's nexuses get 2A/01, and its MODE SENSE shows WCE=0 */
	expect_ua(&t->b, &t->b.b, 0x2a01);
	s[4] = sizeof(d);
	memset(d, 0xff, sizeof(d));
	assert_int_equal(run_cdb(&t->b, &t->b.b, s, 6, d, sizeof(d)), SCSI_STATUS_GOOD);
	assert_int_equal(d[4 + d[3]] & 0x3f, 0x08);
	assert_int_equal(d[4 + d[3] + 2] & 0x04, 0);
	assert_int_equal(run_tur(&t->a, &t->a.a), SCSI_STATUS_GOOD);
}

static void t_power_on_clears_non_aptpl(void **state)
{
	struct two *t = *state;
	uint32_t gen;

	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0, 0xa1, 0), SCSI_STATUS_GOOD);
	assert_int_equal(prout(&t->a, &t->a.a, 0x01, PR_TYPE_WE, 0xa1, 0, 0), SCSI_STATUS_GOOD);
	/* node B restarts while node A runs: not a power on */
	node_close(&t->b);
	assert_int_equal(node_open(&t->b, &test_port2), 0);
	assert_int_equal(read_keys(&t->b, &t->b.b, NULL, NULL), 1);
	assert_int_equal(read_resv(&t->b, &t->b.b, NULL), PR_TYPE_WE);
	/* both stop; the first to start again is alone: power on */
	node_close(&t->a);
	node_close(&t->b);
	memset(&t->a, 0, sizeof(t->a));
	assert_int_equal(node_open(&t->b, &test_port2), 0);
	assert_int_equal(read_keys(&t->b, &t->b.b, &gen, NULL), 0);
	assert_int_equal(gen, 0);
	assert_int_equal(read_resv(&t->b, &t->b.b, NULL), 0);
}

static void t_power_on_keeps_aptpl(void **state)
{
	struct two *t = *state;
	uint64_t key = 0;
	uint32_t gen;

	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0, 0xa1, 0x01), SCSI_STATUS_GOOD);
	assert_int_equal(prout(&t->a, &t->a.a, 0x01, PR_TYPE_EA, 0xa1, 0, 0), SCSI_STATUS_GOOD);
	node_close(&t->a);
	node_close(&t->b);
	memset(&t->a, 0, sizeof(t->a));
	assert_int_equal(node_open(&t->b, &test_port2), 0);
	assert_int_equal(read_keys(&t->b, &t->b.a, &gen, NULL), 1);
	assert_int_equal(gen, 1);
	assert_int_equal(read_resv(&t->b, &t->b.a, &key), PR_TYPE_EA);
	assert_int_equal(key, 0xa1);
	/* still enforced after the power on */
	assert_int_equal(run_read1(&t->b, &t->b.a), SCSI_STATUS_RESERVATION_CONFLICT);
}

/* Closes both nodes, rewrites the file with fn, and expects a refusal. */
static void reopen_expect(struct two *t, int want, void (*fn)(int fd))
{
	struct scsi_lu_params p = shared_params();
	struct membdev *m = mem_create(4 * MB, 512);
	struct scsi_lu *lu = NULL;
	int fd;

	if (t->a.lu)
		node_close(&t->a);
	if (t->b.lu)
		node_close(&t->b);
	memset(&t->a, 0, sizeof(t->a));
	memset(&t->b, 0, sizeof(t->b));
	fd = open(g_path, O_RDWR);
	assert_true(fd >= 0);
	fn(fd);
	close(fd);
	assert_int_equal(scsi_lu_create(&p, &m->b, &lu), want);
	if (lu)
		scsi_lu_destroy(lu);
	mem_destroy(m);
}

static void set_magic(int fd)
{
	assert_int_equal(pwrite(fd, "NOTMAGIC", 8, 0), 8);
}

static void set_short(int fd)
{
	assert_int_equal(ftruncate(fd, 100), 0);
}

static void set_version(int fd)
{
	uint32_t v = SHS_VERSION + 1;

	assert_int_equal(pwrite(fd, &v, sizeof(v), offsetof(struct shs_file, version)), sizeof(v));
}

static void set_nregs(int fd)
{
	uint32_t v = SHS_MAX_REGS + 1;

	assert_int_equal(pwrite(fd, &v, sizeof(v),
				offsetof(struct shs_file, st) + offsetof(struct shs_state, nregs)),
			 sizeof(v));
}

static void set_naa(int fd)
{
	uint8_t x = 0x99;

	assert_int_equal(pwrite(fd, &x, 1, offsetof(struct shs_file, naa) + 5), 1);
}

static void set_zero(int fd)
{
	void *z = calloc(1, sizeof(struct shs_file));

	assert_int_equal(pwrite(fd, z, sizeof(struct shs_file), 0), sizeof(struct shs_file));
	free(z);
}

static void t_corrupt_file_refused(void **state)
{
	struct two *t = *state;

	reopen_expect(t, -EINVAL, set_magic);
	unlink(g_path);
	assert_int_equal(node_open(&t->a, &test_port1), 0);
	reopen_expect(t, -EINVAL, set_short);
	unlink(g_path);
	assert_int_equal(node_open(&t->a, &test_port1), 0);
	reopen_expect(t, -EINVAL, set_version);
	unlink(g_path);
	assert_int_equal(node_open(&t->a, &test_port1), 0);
	reopen_expect(t, -EINVAL, set_nregs);
	unlink(g_path);
	assert_int_equal(node_open(&t->a, &test_port1), 0);
	reopen_expect(t, -EINVAL, set_naa);
	/* all zeroes (a node died while creating it) is a fresh file */
	reopen_expect(t, 0, set_zero);
}

static void t_corrupt_update_ignored(void **state)
{
	struct two *t = *state;
	struct shs *s = NULL;
	bool pon = true;
	uint64_t keys[2];

	assert_int_equal(prout(&t->a, &t->a.a, 0x00, 0, 0, 0xa1, 0), SCSI_STATUS_GOOD);
	assert_int_equal(read_keys(&t->b, &t->b.b, NULL, keys), 1);
	/* a third party writes an out-of-range holder: the nodes keep their copy */
	assert_int_equal(scsi_shs_open(g_path, default_params().naa, true, &s, &pon), 0);
	assert_false(pon);
	assert_int_equal(scsi_shs_lock(s, true), 0);
	s->f->st.pr_held = 1;
	s->f->st.pr_type = PR_TYPE_WE;
	s->f->st.pr_holder = 7;
	scsi_shs_publish(s, true);
	scsi_shs_unlock(s);
	assert_int_equal(read_keys(&t->b, &t->b.b, NULL, keys), 1);
	assert_int_equal(read_resv(&t->b, &t->b.b, NULL), 0);
	/* and changing it is refused rather than overwriting blindly */
	assert_int_equal(prout(&t->b, &t->b.b, 0x00, 0, 0, 0xb2, 0), SCSI_STATUS_CHECK_CONDITION);
	/* once repaired, work goes on */
	assert_int_equal(scsi_shs_lock(s, true), 0);
	s->f->st.pr_held = 0;
	s->f->st.pr_type = 0;
	s->f->st.pr_holder = -1;
	scsi_shs_publish(s, true);
	scsi_shs_unlock(s);
	scsi_shs_close(s);
	assert_int_equal(prout(&t->b, &t->b.b, 0x00, 0, 0, 0xb2, 0), SCSI_STATUS_GOOD);
	assert_int_equal(read_keys(&t->a, &t->a.a, NULL, keys), 2);
}

static void t_store_events_and_overflow(void **state)
{
	struct two *t = *state;
	struct shs *s = NULL;
	struct shs_event ev;
	uint64_t c0, seq = 0;
	bool pon = true;
	unsigned int i;

	assert_int_equal(scsi_shs_open(g_path, default_params().naa, true, &s, &pon), 0);
	assert_false(pon);
	c0 = shs_change(s);
	/* more events than the ring holds while node B is idle */
	assert_int_equal(scsi_shs_lock(s, true), 0);
	memset(&ev, 0, sizeof(ev));
	ev.origin = 42;
	ev.kind = SHS_EV_UA_NEXUS;
	ev.rel_port = 2;
	snprintf(ev.iport, sizeof(ev.iport), "%s", t->b.b.initiator_port);
	for (i = 0; i < SHS_RING + 10; i++) {
		ev.asc = (i == SHS_RING + 9) ? 0x2a05 : 0x2a03;
		seq = scsi_shs_post(s, &ev);
	}
	/* an event of a kind this version does not know, and one with a bad name */
	ev.kind = 77;
	scsi_shs_post(s, &ev);
	ev.kind = SHS_EV_UA_ALL;
	memset(ev.iport, 'x', sizeof(ev.iport));
	seq = scsi_shs_post(s, &ev);
	scsi_shs_publish(s, false);
	scsi_shs_unlock(s);
	assert_int_equal(seq, SHS_RING + 12);
	assert_true(shs_change(s) > c0);
	scsi_shs_close(s);
	/* node B applies what the ring still holds: both UAs, nothing crashes */
	expect_ua(&t->b, &t->b.b, 0x2a03);
	expect_ua(&t->b, &t->b.b, 0x2a05);
	assert_int_equal(run_tur(&t->b, &t->b.b), SCSI_STATUS_GOOD);
	assert_int_equal(run_tur(&t->b, &t->b.a), SCSI_STATUS_GOOD);
	assert_int_equal(run_tur(&t->a, &t->a.b), SCSI_STATUS_GOOD);
}

static void t_store_liveness(void **state)
{
	struct two *t = *state;
	struct shs *s1 = NULL, *s2 = NULL;
	bool pon = false;

	node_close(&t->a);
	node_close(&t->b);
	memset(&t->a, 0, sizeof(t->a));
	memset(&t->b, 0, sizeof(t->b));
	assert_int_equal(scsi_shs_open(g_path, default_params().naa, true, &s1, &pon), 0);
	assert_true(pon);
	assert_int_equal(scsi_shs_open(g_path, default_params().naa, true, &s2, &pon), 0);
	assert_false(pon);
	assert_int_equal(s1->f->power_ons, 2);     /* the first open at setup, and this one */
	scsi_shs_close(s1);
	scsi_shs_close(s2);
	/* a file of another LU is not taken */
	{
		uint8_t naa[16];

		memcpy(naa, default_params().naa, sizeof(naa));
		naa[15] ^= 1;
		assert_int_equal(scsi_shs_open(g_path, naa, true, &s1, &pon), -EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(t_registration_visible, setup, teardown),
		cmocka_unit_test_setup_teardown(t_reservation_enforced_on_other_node, setup, teardown),
		cmocka_unit_test_setup_teardown(t_all_registrants_across_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(t_reserve6_across_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(t_lu_reset_reaches_other_node, setup, teardown),
		cmocka_unit_test_setup_teardown(t_idle_node_polled, setup, teardown),
		cmocka_unit_test_setup_teardown(t_preempt_and_abort_across_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(t_clear_and_release_uas, setup, teardown),
		cmocka_unit_test_setup_teardown(t_ua_kept_for_logged_out_nexus, setup, teardown),
		cmocka_unit_test_setup_teardown(t_mode_select_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(t_power_on_clears_non_aptpl, setup, teardown),
		cmocka_unit_test_setup_teardown(t_power_on_keeps_aptpl, setup, teardown),
		cmocka_unit_test_setup_teardown(t_corrupt_file_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(t_corrupt_update_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(t_store_events_and_overflow, setup, teardown),
		cmocka_unit_test_setup_teardown(t_store_liveness, setup, teardown),
	};

	gw_log_set_level(GW_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
