/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure parts of the iSCSI backstore (backend/iscsi.c), apart so that unit
 * tests reach them without a backend: URL parsing, the reconnect backoff,
 * what to do with a backend status, how an interrupted COMPARE AND WRITE
 * is resolved, and how a split command's data is sliced.
 */
#ifndef ISERGW_BACKEND_ISCSI_PRIV_H
#define ISERGW_BACKEND_ISCSI_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct bdev_iscsi_url {
	char host[256];         /* without the [] of an IPv6 literal */
	uint16_t port;          /* default 3260 */
	char portal[300];       /* "HOST:PORT" or "[V6]:PORT", for libiscsi */
	char iqn[224];
	uint32_t lun;
	char user[256];         /* CHAP towards the backend; "" = none */
	char secret[256];
};

/*
 * iscsi://[user%secret@]HOST[:PORT]/IQN/LUN. Returns 0 or -EINVAL with a
 * one-line reason in err (never containing the secret).
 */
int bdev_iscsi_parse_url(const char *url, struct bdev_iscsi_url *out, char *err, size_t errlen);

/*
 * The designator naming the logical unit in VPD page 0x83 data (page, len
 * bytes as returned): of those associated with the LU (not with a target
 * port or the target device), the first NAA, else EUI-64, else SCSI name
 * string, else T10 vendor ID; into out as designator type, code set and the
 * identifier. Its length, or 0 when there is none (or it does not fit).
 */
size_t bdev_iscsi_lu_designator(const uint8_t *page, size_t len, uint8_t *out, size_t outlen);
/*
 * Whether that designator (d: type, code set, identifier) is unique beyond
 * its target: EUI-64, SCSI name string, NAA IEEE Extended / Registered /
 * Registered Extended. Not: NAA locally assigned (tgt: target id and LUN),
 * T10 vendor ID (the vendor's own numbering).
 */
bool bdev_iscsi_designator_global(const uint8_t *d, size_t len);

/* Reconnect delay before attempt number `attempt` (0 = the first retry). */
#define IB_BACKOFF_BASE_MS 50u
#define IB_BACKOFF_MAX_MS  2000u
uint32_t bdev_iscsi_backoff_ms(unsigned int attempt);

/* What a backend answer means for the command (libiscsi status values). */
enum ib_action {
	IB_DONE = 0,            /* GOOD */
	IB_PASS,                /* hand status and sense to the host unchanged */
	IB_RETRY,               /* issue again now (unit attention of the backend) */
	IB_RETRY_LATER,         /* issue again after a short delay, within the hold limit */
	IB_RECONNECT,           /* the session is broken: reconnect, then issue again */
	IB_UNSUPPORTED,         /* the backend lacks the command: -EOPNOTSUPP (fallback) */
};
/* status: SCSI status, or a negative libiscsi transport status. */
enum ib_action bdev_iscsi_classify(int status, uint8_t key, uint8_t asc, uint8_t ascq,
				   bool optional_cmd);

/*
 * After a session dropped with a COMPARE AND WRITE in flight, the blocks
 * were read back into disk[0..len): was the write applied (the blocks hold
 * the write data), is it safe to issue it again (they still hold the
 * compare data), or is it a miscompare (*miscompare_off: first byte that
 * differs from the compare data)? iov: the command's 2*len data bytes.
 */
enum ib_caw_outcome { IB_CAW_APPLIED, IB_CAW_REISSUE, IB_CAW_MISCOMPARE };
enum ib_caw_outcome bdev_iscsi_caw_outcome(const uint8_t *disk, const struct iovec *iov, int iovcnt,
					   uint64_t len, uint64_t *miscompare_off);

/*
 * The parts of iov[0..iovcnt) that hold bytes [off, off+len) of the data, as
 * new iovecs in out (room for iovcnt entries). Returns how many. The pieces
 * of a split command are slices of the host command's iovecs.
 */
int bdev_iscsi_iov_slice(const struct iovec *iov, int iovcnt, uint64_t off, uint64_t len,
			 struct iovec *out);

/*
 * Fencing at the backend. The reservation type: 5, WRITE EXCLUSIVE -
 * REGISTRANTS ONLY (docs/backend.md says why not 7, ALL REGISTRANTS).
 */
#define IB_PR_TYPE 5

/*
 * Whether writes through an iscsi:// LUN must wait for this node's key to be
 * registered (bdev_awaits_registration): with fencing on, some backend
 * session serves unregistered (it came up without a lease, or found the key
 * preempted), or some session is registered but the key was last seen
 * registered (registration or READ KEYS, confirmed_gen) before the node was
 * last without a lease (lease_gen).
 */
bool bdev_iscsi_awaits_registration(bool fencing, unsigned int up_unregistered,
				    unsigned int registered, uint32_t confirmed_gen,
				    uint32_t lease_gen);
enum ib_pr_outcome {
	IB_PR_OK = 0,           /* done */
	IB_PR_ALREADY,          /* nothing to do: the key to preempt is gone, or the LUN is reserved */
	IB_PR_RETRY,            /* unit attention: issue it again */
	IB_PR_UNSUPPORTED,      /* the backend has no persistent reservations */
	IB_PR_FAIL,
};
/* What a backend answer to PERSISTENT RESERVE OUT service action sa means. */
enum ib_pr_outcome bdev_iscsi_pr_outcome(int sa, int status, uint8_t key, uint8_t asc);
/*
 * The sense data a host gets for a command the backend refused because this
 * node was fenced: NOT READY, LOGICAL UNIT NOT ACCESSIBLE, TARGET PORT IN
 * UNAVAILABLE STATE (02/04/0C), which makes multipath use another path.
 * Fixed format, 18 bytes.
 */
#define IB_FENCED_SENSE_LEN 18
void bdev_iscsi_fenced_sense(uint8_t sense[IB_FENCED_SENSE_LEN]);

#endif
