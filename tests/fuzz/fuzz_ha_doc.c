/* SPDX-License-Identifier: Apache-2.0 */
// LINK: ha_core
// COVERS: ha/doc.c ha/doc_config.c ha/doc_json.c ha/doc_lun.c ha/doc_tokens.c ha/store.c ha/lustore.c
/*
 * The cluster document (ha/doc*.c) as it is replicated and as it is stored:
 * the first byte of an input picks what the rest is.
 *
 *   0  a document's text, as a State message or cluster.json carries it
 *      (ha_doc_parse: the configuration's checks, the runtime's, isergwd's
 *      validator on every node's rendering);
 *   1  the stored form: 2 bytes of length (little-endian), that many bytes of
 *      cluster.json, the rest cluster.journal (none when the mode byte has
 *      bit 7 set), read as ha_doc_load reads the files (ha_doc_load_text,
 *      ha_doc_journal_replay: no file involved);
 *   2  changes to one of the documents below (byte 1 picks it, byte 2 the
 *      change, the rest its arguments): a new configuration, a LUN added or
 *      removed, a token added or revoked, a drain, owners, the runtime map,
 *      the comparison of a configuration;
 *   3  the agent's LU table as lu-state.pb holds it (ha_lu_load_buf).
 *
 * Whatever document comes out is held to what the code promises
 * (docs/ha.md, doc.h): its digest is its text's SHA-256; its text is
 * canonical (parsing it gives the same text, digest and generation: every
 * node computes the same digest); its stored form (the text and a newline)
 * loads back to it; its configuration compares equal to it; every node
 * renders; a document made by one LUN change, stored as the document before
 * it and its journal line, loads back to the same document.
 *
 * Seeds: ISERGW_FUZZ_HA_DOC_SEEDS=DIR makes the target write them and exit
 * (tests/fuzz/corpus/fuzz_ha_doc/README).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "agent.h"
#include "doc_priv.h"
#include "isergw_ctl.pb-c.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum mode { MODE_TEXT = 0, MODE_STORED, MODE_CHANGE, MODE_LU, MODE_COUNT };
enum change { CH_CONFIG = 0, CH_LUN, CH_LUN_CHECK, CH_TOKEN, CH_DRAIN, CH_OWNERS, CH_RUNTIME,
	      CH_EQUAL, CH_COUNT };

/* the docs' example (docs/ha-config.md, "Full example") */
static const char *config_docs =
	"{\"nodes\":["
	"{\"name\":\"gw1\",\"tpg_id\":1,\"portals\":[{\"url\":\"tcp://10.0.0.1:3260\",\"rel_port_id\":1},"
	"{\"url\":\"iser://10.1.0.1:3260\",\"rel_port_id\":4}]},"
	"{\"name\":\"gw2\",\"tpg_id\":2,\"portals\":[{\"url\":\"tcp://10.0.0.2:3260\",\"rel_port_id\":2},"
	"{\"url\":\"iser://10.1.0.2:3260\",\"rel_port_id\":5}]}],"
	"\"device_groups\":[{\"name\":\"a\",\"preferred_owner\":\"gw1\"},"
	"{\"name\":\"b\",\"preferred_owner\":\"gw2\",\"failback\":\"manual\",\"non_owner_state\":\"standby\"}],"
	"\"targets\":[{\"iqn\":\"iqn.2026-11.org.example:cluster\",\"luns\":["
	"{\"lun\":0,\"path\":\"/dev/mapper/shared-a\",\"device_group\":\"a\"},"
	"{\"lun\":1,\"path\":\"/dev/mapper/shared-b\",\"device_group\":\"b\"}]}],"
	"\"discovery_chap\":{\"user\":\"discovery\",\"secret\":\"discovery-secret-1\"},"
	"\"gateway\":{\"log_level\":\"notice\",\"nop_interval_s\":5,\"nop_timeout_s\":30}}";

/* what tests/ha/bed.sh's bed_cluster_config writes (three nodes, a backend LUN) */
static const char *config_bed =
	"{\"nodes\":["
	"{\"name\":\"n1\",\"tpg_id\":1,\"portals\":[{\"url\":\"tcp://10.99.1.1:3260\",\"rel_port_id\":1}]},"
	"{\"name\":\"n2\",\"tpg_id\":2,\"portals\":[{\"url\":\"tcp://10.99.1.2:3260\",\"rel_port_id\":2}]},"
	"{\"name\":\"n3\",\"tpg_id\":3,\"portals\":[{\"url\":\"tcp://10.99.1.3:3260\",\"rel_port_id\":3}]}],"
	"\"device_groups\":["
	"{\"name\":\"dg1\",\"preferred_owner\":\"n1\",\"failback\":\"immediate\"},"
	"{\"name\":\"dg2\",\"preferred_owner\":\"n2\",\"failback\":\"immediate\"},"
	"{\"name\":\"dg3\",\"preferred_owner\":\"n3\",\"failback\":\"immediate\"}],"
	"\"targets\":[{\"iqn\":\"iqn.2026-11.org.isergw:ha\",\"luns\":["
	"{\"lun\":0,\"path\":\"iscsi://10.99.1.100:3260/iqn.2026-11.org.isergw:backend/1\",\"device_group\":\"dg1\"},"
	"{\"lun\":1,\"path\":\"/var/tmp/bed/shared/lun1.img\",\"size\":\"64M\",\"device_group\":\"dg2\"},"
	"{\"lun\":2,\"path\":\"/var/tmp/bed/shared/lun2.img\",\"size\":\"64M\",\"device_group\":\"dg3\"}]}],"
	"\"floating_portals\":[{\"url\":\"tcp://10.99.1.200:3260\",\"rel_port_id\":100,\"tpg_id\":100}],"
	"\"dataplane_grace_ms\":1500,"
	"\"gateway\":{\"log_level\":\"info\",\"backend_fencing\":\"none\"}}";

#define HASH "sha256:000102030405060708090a0b0c0d0e0f:" \
	"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

#define NDOCS 4
static struct ha_doc *docs[NDOCS];      /* the empty one, the docs', the bed's, one with a token */

static void die(const char *what)
{
	fprintf(stderr, "fuzz_ha_doc: %s\n", what);
	abort();
}

/* ------------------------------------------------------------ the promises */

/* A copy of s (len bytes) with a NUL; NULL without memory. */
static char *dupn(const char *s, size_t len)
{
	char *c = malloc(len + 1);

	if (c) {
		memcpy(c, s, len);
		c[len] = '\0';
	}
	return c;
}

static void same_doc(const struct ha_doc *a, const struct ha_doc *b, const char *what)
{
	if (a->generation != b->generation || a->text_len != b->text_len ||
	    memcmp(a->text, b->text, a->text_len) || memcmp(a->digest, b->digest, HA_DIGEST_LEN)) {
		fprintf(stderr, "fuzz_ha_doc: %s\n  %.*s\n  %.*s\n", what, (int)a->text_len, a->text,
			(int)b->text_len, b->text);
		abort();
	}
}

static void check_doc(const struct ha_doc *d)
{
	uint8_t dig[HA_DIGEST_LEN];
	struct ha_doc *p = NULL;
	uint16_t ftpg[HA_FLOATING_MAX];
	struct ha_token *tok = NULL;
	char err[512], *t;
	size_t ntok = 0;
	int rc;

	if (!d->text || strlen(d->text) != d->text_len)
		die("a document without its text");
	SHA256((const unsigned char *)d->text, d->text_len, dig);
	if (memcmp(dig, d->digest, sizeof(dig)))
		die("a digest that is not the text's");
	for (size_t g = 0; g < d->ndgs; g++) {
		struct ha_alua_entry e[HA_NODES_MAX];
		int ao = 0;

		if (d->owner[g] < -1 || d->owner[g] >= (int)d->nnodes ||
		    d->moving_from[g] < -1 || d->moving_from[g] >= (int)d->nnodes)
			die("an owner out of range");
		ha_alua_states(d, (int)g, e);
		for (size_t n = 0; n < d->nnodes; n++)
			ao += e[n].state == 0;
		if (ao > 1)
			die("two port groups Active/Optimized for one device group");
	}
	/* canonical: the text parses to itself */
	rc = ha_doc_parse(d->text, &p, err, sizeof(err));
	if (rc == -ENOMEM)
		return;
	if (rc) {
		fprintf(stderr, "fuzz_ha_doc: generation %llu: %s\n%s\n",
			(unsigned long long)d->generation, err, d->text);
		die("a document's text that does not parse");
	}
	same_doc(d, p, "a document's text that parses to another document");
	ha_doc_free(p);
	/* stored: its text and a newline, as ha_doc_save_text writes it */
	t = dupn(d->text, d->text_len + 1);
	if (t) {
		t[d->text_len] = '\n';
		rc = ha_doc_load_text("cluster.json", t, d->text_len + 1, &p, err, sizeof(err));
		if (rc && rc != -ENOMEM)
			die("a document's stored form that does not load");
		if (!rc)
			same_doc(d, p, "a document's stored form that loads as another");
		ha_doc_free(p);
		free(t);
	}
	t = ha_doc_config_json(d);
	if (t) {
		rc = ha_doc_config_equal(d, t, err, sizeof(err));
		if (rc != 1 && rc != -ENOMEM)
			die("a document's configuration that is not its configuration");
		free(t);
	}
	free(ha_doc_runtime_json(d));
	for (size_t k = 0; k < d->nnodes; k++) {
		struct ha_render_opts o = { .lease_unavailable_ms = 3000 };

		free(ha_doc_render_node_opts(d, (int)k, &o, err, sizeof(err)));
	}
	(void)ha_doc_floating_tpgs(d, ftpg);
	(void)ha_doc_backend_fencing(d);
	if (!ha_doc_tokens(d, &tok, &ntok)) {
		for (size_t i = 0; i < ntok; i++)
			if (!ha_doc_has_token(d, tok[i].name))
				die("a token listed that the document does not have");
		free(tok);
	}
}

/*
 * A document made by one LUN change: stored as the document before it plus
 * its journal line, it loads back to itself.
 */
static void check_journal(const struct ha_doc *before, const struct ha_doc *d)
{
	char err[512], *t, *line = ha_doc_journal_line(d);
	struct ha_doc *p = NULL;

	if (!line) {
		if (d->delta_target)
			return;         /* out of memory */
		die("no journal line for a document made by a LUN change");
	}
	t = dupn(before->text, before->text_len);
	if (t && !ha_doc_load_text("cluster.json", t, before->text_len, &p, err, sizeof(err))) {
		ha_doc_journal_replay("cluster.journal", line, strlen(line), &p);
		same_doc(d, p, "a LUN change that its journal line does not replay");
	}
	ha_doc_free(p);
	free(t);
	free(line);
}

/* ------------------------------------------------------------ the modes */

/* The NUL-separated strings of p (copies in buf), "" past the end. */
static void split(const uint8_t *p, size_t len, char *buf, size_t cap, const char **out,
		  size_t max)
{
	size_t n = 0, k = 0;

	if (len >= cap)
		len = cap - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	while (n < max) {
		out[n++] = buf + k;
		k += strlen(buf + k);
		if (k >= len)
			break;
		k++;
	}
	while (n < max)
		out[n++] = "";
}

static void mode_text(const uint8_t *p, size_t len)
{
	char err[512], *t = dupn((const char *)p, len);
	struct ha_doc *d = NULL;

	if (!t)
		return;
	if (!ha_doc_parse(t, &d, err, sizeof(err))) {
		check_doc(d);
		ha_doc_free(d);
	}
	free(t);
}

static void mode_stored(uint8_t mode, const uint8_t *p, size_t len)
{
	size_t dlen = len >= 2 ? (size_t)p[0] | (size_t)p[1] << 8 : 0;
	char err[512], *text, *journal = NULL;
	struct ha_doc *d = NULL;

	p += len >= 2 ? 2 : len;
	len -= len >= 2 ? 2 : len;
	if (dlen > len)
		dlen = len;
	text = dupn((const char *)p, dlen);
	if (!(mode & 0x80))
		journal = dupn((const char *)p + dlen, len - dlen);
	if (!text || (!(mode & 0x80) && !journal))
		goto out;
	if (ha_doc_load_text("cluster.json", text, dlen, &d, err, sizeof(err)))
		goto out;
	if (journal)
		ha_doc_journal_replay("cluster.journal", journal, len - dlen, &d);
	check_doc(d);
out:
	ha_doc_free(d);
	free(text);
	free(journal);
}

static void mode_change(const uint8_t *p, size_t len)
{
	const struct ha_doc *d = docs[(len ? p[0] : 0) % NDOCS];
	uint8_t ch = len > 1 ? p[1] : 0;
	const uint8_t *a = len > 2 ? p + 2 : p;
	size_t alen = len > 2 ? len - 2 : 0;
	char err[512], buf[8192], *canon = NULL;
	const char *s[3];
	struct ha_doc *nd = NULL;
	int owner[HA_DGS_MAX], moving[HA_DGS_MAX];
	bool live[HA_NODES_MAX];
	uint32_t lun;
	int rc = -1;

	switch (ch % CH_COUNT) {
	case CH_CONFIG:
		split(a, alen, buf, sizeof(buf), s, 1);
		rc = ha_doc_with_config(d, s[0], &nd, err, sizeof(err));
		if (!rc && ha_config_check(s[0], err, sizeof(err)))
			die("a configuration taken that ha_config_check refuses");
		break;
	case CH_LUN:
	case CH_LUN_CHECK:
		/* number, then "iqn" NUL "lun json" (empty: remove; "?": the lowest free) */
		lun = alen ? a[0] : 0;
		split(alen ? a + 1 : a, alen ? alen - 1 : 0, buf, sizeof(buf), s, 2);
		if (!strcmp(s[1], "?")) {
			if (ha_doc_lun_free(d, s[0], &lun, err, sizeof(err)))
				break;
			s[1] = "{\"path\":\"/var/lib/isergw/free.img\",\"size\":\"1M\"}";
		}
		if (ch % CH_COUNT == CH_LUN_CHECK) {
			(void)ha_doc_lun_check(d, s[0], lun, s[1][0] ? s[1] : NULL, &canon, err,
					       sizeof(err));
			free(canon);
			break;
		}
		rc = ha_doc_with_lun(d, s[0], lun, s[1][0] ? s[1] : NULL, &nd, err, sizeof(err));
		if (!rc)
			check_journal(d, nd);
		break;
	case CH_TOKEN:
		split(a, alen, buf, sizeof(buf), s, 3);
		rc = ha_doc_with_token(d, s[0], s[1][0] ? s[1] : NULL, s[2], 1764300000, &nd, err,
				       sizeof(err));
		break;
	case CH_DRAIN:
		rc = ha_doc_with_drain(d, alen ? (int)(int8_t)a[0] : 0, alen > 1 && (a[1] & 1), &nd);
		break;
	case CH_OWNERS:
	case CH_RUNTIME:
		for (size_t g = 0; g < d->ndgs; g++) {
			owner[g] = g < alen ? (int)(int8_t)a[g] % 4 : -1;
			moving[g] = g + d->ndgs < alen ? (int)(int8_t)a[g + d->ndgs] % 4 : -1;
		}
		for (size_t n = 0; n < d->nnodes; n++)
			live[n] = !(2 * d->ndgs + n < alen && (a[2 * d->ndgs + n] & 1));
		if (ch % CH_COUNT == CH_OWNERS)
			rc = ha_doc_with_owners(d, owner, &nd);
		else
			rc = ha_doc_with_runtime(d, owner, moving, live, &nd);
		break;
	case CH_EQUAL:
		split(a, alen, buf, sizeof(buf), s, 1);
		(void)ha_doc_config_equal(d, s[0], err, sizeof(err));
		break;
	}
	if (!rc) {
		if (nd->generation != d->generation + 1)
			die("a change that is not the next generation");
		check_doc(nd);
	}
	ha_doc_free(nd);
}

static int nop_send(void *ctx, const HaMsg *m)
{
	(void)ctx;
	(void)m;
	return 0;
}

static void mode_lu(const uint8_t *p, size_t len)
{
	static const struct ha_sm_ops ops = { .send = nop_send };
	struct ha_sm_params prm = { .nodeid = 1, .name = "n1", .cluster = "fz", .lease_ms = 1500,
				    .heartbeat_ms = 100 };
	struct ha_doc *empty = NULL;
	struct ha_sm sm;

	if (ha_doc_empty(&empty) || ha_sm_init(&sm, &prm, &ops, NULL, empty, 1000)) {
		ha_doc_free(empty);
		return;
	}
	if (!ha_lu_load_buf(&sm, "lu-state.pb", p, len)) {
		for (size_t i = 0; i < sm.lus.n; i++) {
			Isergw__Ctl__LuState *s;

			if (!sm.lus.v[i].version)
				die("an LU state of version 0 loaded");
			/* power on keeps only the APTPL states, as they were stored */
			s = isergw__ctl__lu_state__unpack(NULL, sm.lus.v[i].len, sm.lus.v[i].state);
			if (s && !s->aptpl)
				die("an LU state without APTPL kept at power on");
			if (s)
				isergw__ctl__lu_state__free_unpacked(s, NULL);
		}
		for (size_t i = 0; i < sm.lus.nparked; i++)
			if (strcmp(sm.lus.parked[i].node, "n1"))
				die("another node's unit attention loaded");
	}
	ha_sm_fini(&sm);
}

/* ------------------------------------------------------------ libFuzzer */

static void gen_seeds(const char *dir);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("ISERGW_FUZZ_HA_DOC_SEEDS");
	struct ha_doc *d1 = NULL;
	char err[512];
	int own_docs[2] = { 0, 1 }, own_bed[3] = { 0, 1, 2 };

	(void)argc;
	(void)argv;
	gw_log_set_level(seeds ? GW_LOG_WARN : GW_LOG_ERR);
	if (ha_doc_empty(&docs[0]))
		die("no empty document");
	if (ha_doc_with_config(docs[0], config_docs, &d1, err, sizeof(err)) ||
	    ha_doc_with_owners(d1, own_docs, &docs[1]))
		goto bad;
	ha_doc_free(d1);
	if (ha_doc_with_config(docs[0], config_bed, &d1, err, sizeof(err)) ||
	    ha_doc_with_owners(d1, own_bed, &docs[2]))
		goto bad;
	ha_doc_free(d1);
	if (ha_doc_with_token(docs[2], "ops", "admin", HASH, 1764300000, &docs[3], err, sizeof(err)))
		goto bad;
	if (seeds) {
		gen_seeds(seeds);
		exit(0);
	}
	return 0;
bad:
	fprintf(stderr, "fuzz_ha_doc: the start documents: %s\n", err);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % MODE_COUNT) {
	case MODE_TEXT:
		mode_text(data + 1, size - 1);
		break;
	case MODE_STORED:
		mode_stored(data[0], data + 1, size - 1);
		break;
	case MODE_CHANGE:
		mode_change(data + 1, size - 1);
		break;
	case MODE_LU:
		mode_lu(data + 1, size - 1);
		break;
	}
	return 0;
}

/* ------------------------------------------------------------ the seeds */

static const char *seed_dir;

static void seed(const char *name, uint8_t mode, const void *a, size_t alen, const void *b,
		 size_t blen)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", seed_dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(&mode, 1, 1, f) != 1 || (alen && fwrite(a, 1, alen, f) != alen) ||
	    (blen && fwrite(b, 1, blen, f) != blen) || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* A change of docs[doc]: kind, then its arguments. */
static void seed_change(const char *name, uint8_t doc, uint8_t ch, const void *a, size_t alen)
{
	uint8_t head[2] = { doc, ch };

	seed(name, MODE_CHANGE, head, 2, a, alen);
}

static void seed_doc(const char *name, const struct ha_doc *d)
{
	seed(name, MODE_TEXT, d->text, d->text_len, NULL, 0);
}

/* The document before a LUN change stored, and the change's journal line. */
static void seed_stored(const char *name, const struct ha_doc *before, const struct ha_doc *d)
{
	char *line = d ? ha_doc_journal_line(d) : NULL;
	uint8_t head[2] = { (uint8_t)(before->text_len + 1), (uint8_t)((before->text_len + 1) >> 8) };
	char *t = dupn(before->text, before->text_len + 1);

	if (!t || before->text_len + 1 > 0xffff)
		die("a seed too large");
	t[before->text_len] = '\n';
	{
		size_t n = 2 + before->text_len + 1 + (line ? strlen(line) : 0);
		uint8_t *b = malloc(n);

		if (!b)
			die("no memory");
		memcpy(b, head, 2);
		memcpy(b + 2, t, before->text_len + 1);
		if (line)
			memcpy(b + 2 + before->text_len + 1, line, strlen(line));
		seed(name, line ? MODE_STORED : MODE_STORED | 0x80, b, n, NULL, 0);
		free(b);
	}
	free(t);
	free(line);
}

static void seed_lu(const char *name)
{
	Isergw__Ha__LuStore st = ISERGW__HA__LU_STORE__INIT;
	Isergw__Ha__LuBlob b[2], *bp[2] = { &b[0], &b[1] };
	Isergw__Ha__LuParked pk[2], *pkp[2] = { &pk[0], &pk[1] };
	Isergw__Ctl__LuState s = ISERGW__CTL__LU_STATE__INIT;
	Isergw__Ctl__LuReg r = ISERGW__CTL__LU_REG__INIT, *rp = &r;
	struct ha_lu_parked e[2] = {
		{ .version = 2, .node = "n1", .iport = "iqn.2026-11.org.example:h,i,0x1",
		  .rel_port = 1, .asc = 0x2a05 },
		{ .version = 3, .node = "n2", .iport = "iqn.2026-11.org.example:h,i,0x1",
		  .rel_port = 2, .asc = 0x2a03 },
	};
	uint8_t naa[2][16], state[2][256], out[2048];
	size_t slen[2];

	for (int i = 0; i < 2; i++) {
		for (int k = 0; k < 16; k++)
			naa[i][k] = (uint8_t)(0x60 + k);
		naa[i][15] = (uint8_t)i;
		memcpy(e[i].naa, naa[i], 16);
		s.naa.data = naa[i];
		s.naa.len = 16;
		s.version = 2u + (unsigned int)i;
		s.aptpl = i == 0;
		s.pr_generation = 3;
		s.pr_holder = 0;
		s.pr_held = true;
		s.pr_type = 5;
		r.key = 0xabc;
		r.rel_port = 1;
		r.all_tg_pt = i == 1;
		r.iport = (char *)(uintptr_t)"iqn.2026-11.org.example:h,i,0x1";
		s.regs = &rp;
		s.n_regs = 1;
		slen[i] = isergw__ctl__lu_state__get_packed_size(&s);
		if (slen[i] > sizeof(state[i]))
			die("an LU state too large");
		isergw__ctl__lu_state__pack(&s, state[i]);
		isergw__ha__lu_blob__init(&b[i]);
		b[i].naa.data = naa[i];
		b[i].naa.len = 16;
		b[i].version = 2u + (unsigned int)i;
		b[i].state.data = state[i];
		b[i].state.len = slen[i];
		b[i].handed = 1;
		ha_lu_parked_to_pb(&e[i], &pk[i]);
	}
	st.lu_states = bp;
	st.n_lu_states = 2;
	st.lu_parked = pkp;
	st.n_lu_parked = 2;
	if (isergw__ha__lu_store__get_packed_size(&st) > sizeof(out))
		die("an LU table too large");
	seed(name, MODE_LU, out, isergw__ha__lu_store__pack(&st, out), NULL, 0);
}

static void gen_seeds(const char *dir)
{
	static const char docs_example[] =
		"{\"config\":{\"device_groups\":[{\"name\":\"a\",\"preferred_owner\":\"gw1\"},{\"failback\":\"manual\",\"name\":\"b\",\"non_owner_state\":\"standby\",\"preferred_owner\":\"gw2\"}],\"discovery_chap\":{\"secret\":\"discovery-secret-1\",\"user\":\"discovery\"},\"gateway\":{\"log_level\":\"notice\",\"nop_interval_s\":5,\"nop_timeout_s\":30},\"nodes\":[{\"name\":\"gw1\",\"portals\":[{\"rel_port_id\":1,\"url\":\"tcp://10.0.0.1:3260\"},{\"rel_port_id\":4,\"url\":\"iser://10.1.0.1:3260\"}],\"tpg_id\":1},{\"name\":\"gw2\",\"portals\":[{\"rel_port_id\":2,\"url\":\"tcp://10.0.0.2:3260\"},{\"rel_port_id\":5,\"url\":\"iser://10.1.0.2:3260\"}],\"tpg_id\":2}],\"targets\":[{\"iqn\":\"iqn.2026-11.org.example:cluster\",\"luns\":[{\"device_group\":\"a\",\"lun\":0,\"path\":\"/dev/mapper/shared-a\"},{\"device_group\":\"b\",\"lun\":1,\"path\":\"/dev/mapper/shared-b\"}]}]},\"generation\":2,\"runtime\":{\"drained\":[],\"live\":[\"gw1\",\"gw2\"],\"moving\":{},\"owners\":{\"a\":\"gw1\",\"b\":\"gw2\"}}}";
	static const char lun_add[] = "\x03iqn.2026-11.org.isergw:ha\0"
		"{\"path\":\"/var/tmp/bed/shared/lun3.img\",\"size\":\"64M\",\"device_group\":\"dg2\","
		"\"block_size\":4096,\"product\":\"bed lun 3\",\"thin\":true}";
	static const char lun_free[] = "\x00iqn.2026-11.org.isergw:ha\0?";
	static const char lun_check[] = "\x02iqn.2026-11.org.example:cluster\0"
		"{\"path\":\"/dev/mapper/shared-c\",\"device_group\":\"b\"}";
	static const char lun_del[] = "\x01iqn.2026-11.org.isergw:ha";
	static const char token[] = "ro\0read-only\0" HASH;
	static const char revoke[] = "ops\0";
	struct ha_doc *d = NULL, *d2 = NULL;
	char err[512];
	int owner[3] = { 1, -1, 2 }, moving[3] = { -1, 0, -1 };
	bool live[3] = { false, true, true };

	seed_dir = dir;
	/* mode 0: documents */
	seed("doc-docs-example", MODE_TEXT, docs_example, sizeof(docs_example) - 1, NULL, 0);
	seed_doc("doc-empty", docs[0]);
	seed_doc("doc-bed", docs[2]);
	seed_doc("doc-bed-token", docs[3]);
	if (ha_doc_with_runtime(docs[2], owner, moving, live, &d))
		die("a runtime seed");
	seed_doc("doc-bed-moving", d);
	if (ha_doc_with_drain(d, 0, true, &d2))
		die("a drain seed");
	seed_doc("doc-bed-drained", d2);
	ha_doc_free(d);
	ha_doc_free(d2);
	/* mode 1: stored forms, with and without a journal of LUN changes */
	seed_stored("stored-docs", docs[1], NULL);
	if (ha_doc_with_lun(docs[2], "iqn.2026-11.org.isergw:ha", 3, lun_add + 2 + strlen(lun_add + 1), &d, err,
			    sizeof(err)) ||
	    ha_doc_with_lun(d, "iqn.2026-11.org.isergw:ha", 1, NULL, &d2, err, sizeof(err)))
		die(err);
	seed_stored("stored-bed-journal-add", docs[2], d);
	{
		/* two lines: the add and the removal */
		char *l1 = ha_doc_journal_line(d), *l2 = ha_doc_journal_line(d2);
		size_t n1 = strlen(l1), n2 = strlen(l2), n = 2 + docs[2]->text_len + 1 + n1 + n2;
		uint8_t *b = malloc(n);

		b[0] = (uint8_t)(docs[2]->text_len + 1);
		b[1] = (uint8_t)((docs[2]->text_len + 1) >> 8);
		memcpy(b + 2, docs[2]->text, docs[2]->text_len);
		b[2 + docs[2]->text_len] = '\n';
		memcpy(b + 3 + docs[2]->text_len, l1, n1);
		memcpy(b + 3 + docs[2]->text_len + n1, l2, n2);
		seed("stored-bed-journal-two", MODE_STORED, b, n, NULL, 0);
		free(b);
		free(l1);
		free(l2);
	}
	ha_doc_free(d);
	ha_doc_free(d2);
	/* mode 2: changes */
	seed_change("change-config-bed", 0, CH_CONFIG, config_bed, strlen(config_bed));
	seed_change("change-config-docs", 2, CH_CONFIG, config_docs, strlen(config_docs));
	seed_change("change-lun-add", 2, CH_LUN, lun_add, sizeof(lun_add) - 1);
	seed_change("change-lun-free", 3, CH_LUN, lun_free, sizeof(lun_free) - 1);
	seed_change("change-lun-remove", 2, CH_LUN, lun_del, sizeof(lun_del) - 1);
	seed_change("change-lun-check", 1, CH_LUN_CHECK, lun_check, sizeof(lun_check) - 1);
	seed_change("change-token-add", 2, CH_TOKEN, token, sizeof(token) - 1);
	seed_change("change-token-revoke", 3, CH_TOKEN, revoke, sizeof(revoke) - 1);
	seed_change("change-drain", 2, CH_DRAIN, "\x01\x01", 2);
	seed_change("change-owners", 2, CH_OWNERS, "\x01\xff\x02", 3);
	seed_change("change-runtime", 2, CH_RUNTIME, "\x01\xff\x02\xff\x00\xff\x01\x00\x00", 9);
	seed_change("change-equal", 1, CH_EQUAL, config_docs, strlen(config_docs));
	/* mode 3: the LU table */
	seed_lu("lu-table");
}
