/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's configuration: built from the JSON file (--config) or from the
 * quick-serve command line; validated before use. Documented key by key in
 * docs/configuration.md.
 */
#ifndef ISERGW_CONFIG_H
#define ISERGW_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_NAME_MAX   224   /* iSCSI names are at most 223 bytes + NUL */
#define GW_DG_NAME_MAX 64   /* ALUA device group names, with the NUL */
#define GW_PG_PORTS_MAX 64  /* relative ports per target port group */
#define GW_PR_FENCE_MAX 64  /* backend_pr_fence entries */
#define GW_SECRET_MAX 256

enum gw_transport {
	GW_TRANSPORT_TCP = 0,
	GW_TRANSPORT_ISER,
};

struct gw_chap_cfg {
	char user[GW_SECRET_MAX];
	char secret[GW_SECRET_MAX];
};

struct gw_portal_cfg {
	enum gw_transport transport;
	char addr[64];          /* numeric IPv4/IPv6 address or host name */
	uint16_t port;          /* default 3260 */
	uint16_t tpgt;          /* target portal group tag; 0 = its rel_port_id (the default) */
	uint16_t rel_port_id;   /* relative target port id, default = 1-based index */
	uint16_t tpg_id;        /* target port group id (ALUA), default 1 */
};

struct gw_lun_cfg {
	uint32_t lun;
	char path[PATH_MAX];    /* file or block device */
	uint64_t size;          /* create sparse with this size when missing (0 = must exist) */
	uint32_t block_size;    /* 512 or 4096; default 512 */
	char serial[64];        /* default derived from target iqn + lun */
	uint8_t naa[16];        /* default derived from target iqn + lun */
	bool naa_set;
	bool readonly;
	bool write_cache;       /* default true */
	bool thin;              /* advertise thin provisioning / UNMAP; default true */
	char vendor[9];         /* default "ISERGW" */
	char product[17];       /* default "isergw disk" */
	uint64_t max_transfer;  /* MAXIMUM TRANSFER LENGTH, bytes, enforced; 0 = 8 MiB, not enforced */
	/* path "iscsi://[user%secret@]HOST[:PORT]/IQN/LUN": a backend iSCSI LUN */
	uint32_t backend_sessions;      /* sessions per reactor, default 1 */
	uint32_t backend_hold_s;        /* hold commands while the backend is down, default 30 */
	uint32_t backend_timeout_s;     /* one backend command, default 15 */
	uint64_t backend_read_chunk;    /* READs longer go as pieces this long; default 256K, 0 = never */
	char backend_initiator[GW_NAME_MAX]; /* our initiator name there, default isergw's */
	char device_group[GW_DG_NAME_MAX];   /* ALUA device group, "" = "default" */
};

/* A target port group of the cluster (ALUA): the relative ports it holds. */
struct gw_port_group_cfg {
	uint16_t tpg_id;
	uint16_t rel_port_ids[GW_PG_PORTS_MAX];
	size_t nrel_port_ids;
};

/* An ALUA device group: LUs that fail over together, and their default states. */
struct gw_device_group_cfg {
	char name[GW_DG_NAME_MAX];
	uint16_t owner_tpg_id;          /* 0: none (every group Active/Optimized) */
	uint8_t non_owner_state;        /* SPC-4 code: 1 Active/Non-optimized (default), 2 Standby, 3 Unavailable */
};

struct gw_acl_cfg {
	char initiator[GW_NAME_MAX];
	struct gw_chap_cfg chap;        /* empty user: use the target's chap */
};

struct gw_target_cfg {
	char iqn[GW_NAME_MAX];
	char alias[256];
	struct gw_lun_cfg *luns;
	size_t nluns;
	size_t luns_cap;                /* room in luns (gw_lun_add); below nluns: nluns */
	struct gw_acl_cfg *acls;        /* none: any initiator may log in */
	size_t nacls;
	struct gw_chap_cfg chap;        /* incoming CHAP: initiator authenticates to us */
	struct gw_chap_cfg mutual_chap; /* outgoing CHAP: we authenticate to the initiator */
	/* operational defaults offered by the target (RFC 7143 13.x) */
	uint32_t max_recv_dsl;          /* default 262144 */
	uint32_t max_burst;             /* default 16776192 */
	uint32_t first_burst;           /* default 262144 */
	uint32_t max_outstanding_r2t;   /* default 1 */
	bool initial_r2t;               /* default false (we accept unsolicited data) */
	bool immediate_data;            /* default true */
	uint32_t queue_depth;           /* CmdSN window per session, default 128 */
};

struct gw_config {
	struct gw_portal_cfg *portals;
	size_t nportals;
	struct gw_target_cfg *targets;
	size_t ntargets;
	unsigned int reactors;          /* 0 = one per online CPU */
	char log_level[16];             /* default "notice" */
	char state_dir[PATH_MAX];       /* default /var/lib/isergw */
	char ctl_socket[PATH_MAX];      /* default /run/isergw/isergwd.sock */
	uint32_t nop_interval_s;        /* NOP-In ping of idle connections, default 5, 0 = off */
	uint32_t nop_timeout_s;         /* drop a connection that does not answer, default 30 */
	uint32_t login_timeout_s;       /* a login must complete within this, default 15 */
	/* connections from one address (IPv6: its /64) in the login phase at once, default 64 */
	uint32_t max_logins_per_address;
	/*
	 * TCP: the Data-In of a large READ from a file or block device is
	 * spliced from the page cache to the socket, not copied through a
	 * buffer (docs/architecture.md, "Data-In without a copy"). Default true.
	 */
	bool tcp_splice;
	struct gw_chap_cfg discovery_chap; /* CHAP for discovery sessions (empty: none) */
	/* LU control state shared with the other gateway nodes ("": standalone) */
	char shared_state_dir[PATH_MAX];
	struct gw_port_group_cfg *port_groups;  /* the cluster's target port groups */
	size_t nport_groups;
	struct gw_device_group_cfg *device_groups;
	size_t ndevice_groups;
	/*
	 * Who owns the ALUA policy: false ("local", default) applies SET TARGET
	 * PORT GROUPS here; true ("external") hands it to the control socket's
	 * subscribers and holds it until they answer or the timeout passes.
	 */
	bool alua_policy_external;
	/*
	 * lu_state "cluster": the LU state (reservations, mode bits, the UAs
	 * for other nodes) is the HA agent's to carry (docs/scsi.md); "local"
	 * (default): this node's, or shared_state_dir's when set.
	 */
	bool lu_state_cluster;
	uint32_t alua_request_timeout_ms;       /* default 10000 */
	/*
	 * Serve ALUA-governed I/O only under a valid lease given over the
	 * control socket (the HA agent); zero portals and targets are then
	 * accepted (the agent pushes them). Default false.
	 */
	bool alua_lease;
	uint32_t alua_lease_unavailable_ms;     /* Transitioning this long after expiry, default 2000 */
	/*
	 * Fencing at the backend (docs/backend.md, "The gateways' reservation"):
	 * this node's persistent reservation key on every iscsi:// backend LUN
	 * (0: none, no reservation is used) and the keys of the nodes to fence
	 * (preempt). backend_fencing false ("none") switches both off.
	 */
	bool backend_fencing;                   /* default true ("reservation") */
	uint64_t backend_pr_key;
	uint64_t backend_pr_fence[GW_PR_FENCE_MAX];
	size_t nbackend_pr_fence;
};

/*
 * The backend reservation key of the gateway node whose target port group
 * is tpg_id: "isgw" in the upper 32 bits, tpg_id in the lower ones, so every
 * node names every other node's key from the cluster configuration alone.
 */
#define GW_PR_KEY_BASE 0x6973677700000000ull
uint64_t gw_backend_pr_key(uint16_t tpg_id);
/* Parses "0x" followed by 1..16 hex digits, not zero. 0 or -EINVAL. */
int gw_parse_pr_key(const char *s, uint64_t *out);
/*
 * The keys ncfg asks to fence that old did not (old NULL: all of them), into
 * out (room for GW_PR_FENCE_MAX); none when ncfg has fencing off or no key of
 * its own. Returns how many.
 */
size_t gw_config_fence_new(const struct gw_config *old, const struct gw_config *ncfg,
			   uint64_t *out);

/* Fill every field with its default (no portals, no targets). */
void gw_config_defaults(struct gw_config *c);
/* Defaults for one target / LUN / portal. */
void gw_target_defaults(struct gw_target_cfg *t);
void gw_lun_defaults(struct gw_lun_cfg *l);
void gw_portal_defaults(struct gw_portal_cfg *p);

/*
 * Parse a JSON configuration file into *out (allocated). On error returns
 * -EINVAL (or -errno for I/O) and writes a one-line reason, naming the key
 * path (e.g. "targets[0].luns[1].path: missing"), into err.
 */
int gw_config_load_file(const char *path, struct gw_config **out, char *err, size_t errlen);
/*
 * The bytes of a file, size of them at the most (its size as fstat saw it; a
 * file that shrank meanwhile gives fewer), from fd into *buf (allocated, NUL
 * added) and their count into *len: 0, -ENOMEM or -errno.
 */
int gw_config_read_fd(int fd, size_t size, char **buf, size_t *len);
int gw_config_load_string(const char *json, struct gw_config **out, char *err, size_t errlen);
/* The line and column (from 1) of byte off of the JSON text s, for its parse errors. */
void gw_config_line_col(const char *s, size_t off, unsigned int *line, unsigned int *col);
/*
 * The JSON value that is the whole of text (len bytes, white space may
 * follow it) into *out: 0, -ENOMEM ("out of memory" in err), or -EINVAL
 * with "line L column C: why" in err, why being the parser's reason,
 * "unexpected end of input", or trailing for text after the value.
 */
struct json_object;
int gw_json_parse_text(const char *text, size_t len, const char *trailing,
		       struct json_object **out, char *err, size_t errlen);
/* The same, with base's top-level settings (not its lists) as the defaults of the keys not given. */
int gw_config_load_string_base(const char *json, const struct gw_config *base,
			       struct gw_config **out, char *err, size_t errlen);
/*
 * Cross-field checks (duplicate LUNs/IQNs, iqn syntax, chap secret lengths,
 * TPGTs, ...). Portals and targets may be absent (the load functions require
 * them unless alua_lease is true).
 */
int gw_config_validate(const struct gw_config *c, char *err, size_t errlen);
/* Fill derived defaults: serial and NAA of LUNs from target iqn + lun number. */
void gw_config_finalize(struct gw_config *c);
/*
 * One LUN object (a member of targets[ti].luns, at index li) of target iqn:
 * its fields parsed and checked as gw_config_load_* does, its derived
 * defaults filled in; messages name "targets[ti].luns[li].KEY". Not checked
 * here (the caller's, against the LUNs and device groups it has): that the
 * number is free, that device_group exists.
 */
struct json_object;
int gw_lun_parse(struct json_object *obj, const char *iqn, size_t ti, size_t li,
		 struct gw_lun_cfg *out, char *err, size_t errlen);
void gw_config_free(struct gw_config *c);

/*
 * The textual identity of a LUN's backing store (its "path"), in out (room
 * for GW_STORE_KEY_MAX): an iscsi:// URL as "iscsi://host:port/iqn/lun"
 * (the user%secret@ part dropped, host and IQN in lower case, the default
 * port 3260 written out, leading zeros and empty parts dropped); a file or
 * device path with "//", "/./", "DIR/.." and a trailing slash folded away.
 * LUNs with one key name one store (gw_config_check_stores); what
 * only the file system knows (links, devices, relative paths) and backend
 * LUNs reached by other addresses are found where isergwd opens the stores.
 * Returns 0 or -ENAMETOOLONG.
 */
#define GW_STORE_KEY_MAX (PATH_MAX + 16)
int gw_store_key(const char *path, char *out, size_t len);
/*
 * The message refusing a second LUN on one store, into err:
 * "WHAT: LUN lun of iqn and LUN other_lun of other_iqn name one backing
 * store (KEY): a store belongs to one LUN" (what NULL: without "WHAT: ").
 * Returns -EINVAL.
 */
int gw_store_conflict(char *err, size_t errlen, const char *what, const char *iqn, uint32_t lun,
		      const char *other_iqn, uint32_t other_lun, const char *key);
/*
 * No two LUNs on one backing store, by their keys (gw_store_key): 0, or
 * -EINVAL with gw_store_conflict's message, or -ENOMEM. Apart from
 * gw_config_validate so that a configuration made before the check can
 * still be read: every entry point of a new configuration calls it
 * (isergwd's file, SIGHUP and ApplyConfig, the HA agent's checks of a new
 * configuration, which isergw-api's writes go through).
 */
int gw_config_check_stores(const struct gw_config *c, char *err, size_t errlen);
/*
 * What the text cannot tell, asked of this node's file system (stat, links
 * followed): two LUNs on one file (device + inode: hard links, symlinks,
 * relative and absolute paths) or one block device (its device number)
 * are refused with gw_store_conflict's message. Paths that do not exist
 * (yet) and iscsi:// LUNs are left to the open. 0, -EINVAL or -ENOMEM.
 */
int gw_config_check_files(const struct gw_config *c, char *err, size_t errlen);

/* Parse "tcp://ADDR[:PORT]" / "iser://ADDR[:PORT]" ("[v6]:port" too). */
int gw_portal_parse(const char *url, struct gw_portal_cfg *out);
/* Parse a size like "1G", "512M", "1073741824". */
int gw_parse_size(const char *s, uint64_t *out);
/* Checked conversions; return 0 or -EINVAL/-ERANGE. */
int gw_parse_u64(const char *s, uint64_t *out);
int gw_parse_u32(const char *s, uint32_t *out);
/*
 * Command-line option values of a daemon: a string of 1..len-1 bytes copied
 * to dst, a number in min..max; on a bad value "PROG: WHAT: ..." on stderr and
 * -EINVAL.
 */
int gw_opt_str(const char *prog, char *dst, size_t len, const char *v, const char *what);
/*
 * getopt_long (with opterr = 0) answered '?': one err line naming the option
 * refused (optopt when a short one, otherwise argv[optind - 1]).
 */
void gw_opt_refused(const char *prog, char *const *argv, int optind_now, int opt);
int gw_opt_u32(const char *prog, uint32_t *dst, const char *v, uint32_t min, uint32_t max,
	       const char *what);

#endif
