/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iSCSI backstore, fencing at the backend (docs/backend.md, "The gateways'
 * reservation"): a short blocking session of its own preempts other nodes'
 * keys (control thread).
 */
#ifdef ISERGW_HAVE_LIBISCSI

#include "backend/iscsi_int.h"

/* ------------------------------------------------------------------------ */
/* fencing: preempting other nodes' keys (control thread, blocking)         */

/* One PERSISTENT RESERVE OUT on a synchronous session, retried on unit attentions. */
static enum ib_pr_outcome fence_pr_out(struct iscsi_context *ctx, struct ib_bdev *ib, int sa,
				       uint64_t key, uint64_t sa_key, uint64_t deadline,
				       char *why, size_t whylen)
{
	for (int tries = 0; tries < 8; tries++) {
		struct scsi_persistent_reserve_out_basic p = {
			.reservation_key = key, .service_action_reservation_key = sa_key,
		};
		struct disc d = { 0 };
		struct scsi_task *t;
		enum ib_pr_outcome o;
		uint8_t k = 0, asc = 0, ascq = 0;
		int rc;

		t = iscsi_persistent_reserve_out_task(ctx, (int)ib->url.lun, sa,
						      SCSI_PERSISTENT_RESERVE_SCOPE_LU, IB_PR_TYPE, &p,
						      ib_disc_cb, &d);
		if (!t) {
			snprintf(why, whylen, "cannot queue PERSISTENT RESERVE OUT: %s",
				 iscsi_get_error(ctx));
			return IB_PR_FAIL;
		}
		rc = ib_disc_wait(ctx, ib, &d, deadline);
		if (rc) {
			snprintf(why, whylen, "PERSISTENT RESERVE OUT (service action %d): %s", sa,
				 rc == -ETIMEDOUT ? "no answer in time" : strerror(-rc));
			return IB_PR_FAIL;
		}
		if (d.status == SCSI_STATUS_CHECK_CONDITION) {
			k = (uint8_t)t->sense.key;
			asc = (uint8_t)(t->sense.ascq >> 8);
			ascq = (uint8_t)t->sense.ascq;
		}
		scsi_free_scsi_task(t);
		o = d.status < 0 ? IB_PR_FAIL : bdev_iscsi_pr_outcome(sa, d.status, k, asc);
		if (o == IB_PR_RETRY)
			continue;
		if (o == IB_PR_FAIL || o == IB_PR_UNSUPPORTED)
			snprintf(why, whylen, "PERSISTENT RESERVE OUT (service action %d): status 0x%x "
				 "sense %x/%02x/%02x", sa, d.status, k, asc, ascq);
		return o;
	}
	snprintf(why, whylen, "PERSISTENT RESERVE OUT (service action %d): unit attentions", sa);
	return IB_PR_FAIL;
}

int bdev_iscsi_fence(struct bdev *b, const uint64_t *keys, size_t n, uint32_t timeout_ms)
{
	struct ib_bdev *ib;
	uint64_t deadline = gw_now_ms() + timeout_ms, own = atomic_load(&ib_pr_key);
	struct iscsi_context *ctx;
	struct disc d = { 0 };
	enum ib_pr_outcome o;
	char why[512] = "";
	int rc;

	if (!b || b->ops != &bdev_iscsi_ops)
		return -EINVAL;
	ib = to_ib(b);
	if (!own || atomic_load(&ib->pr_unsupported))
		return -EOPNOTSUPP;
	if (n == 0)
		return 0;
	ctx = ib_sync_context(ib, timeout_ms, 0xfffeu);     /* a nexus of its own */
	if (!ctx)
		return -ENOMEM;
	if (iscsi_full_connect_async(ctx, ib->url.portal, (int)ib->url.lun, ib_disc_cb, &d) != 0) {
		snprintf(why, sizeof(why), "cannot connect: %s", iscsi_get_error(ctx));
		rc = -ECONNREFUSED;
		goto out;
	}
	rc = ib_disc_wait(ctx, ib, &d, deadline);
	if (rc || d.status != SCSI_STATUS_GOOD) {
		snprintf(why, sizeof(why), "cannot log in: %s", rc == -ETIMEDOUT ? "timed out"
			 : d.err[0] ? d.err : iscsi_get_error(ctx));
		if (rc)
			ib_disc_drain(ctx, &d, 200);
		rc = rc == -ETIMEDOUT ? rc : -ECONNREFUSED;
		goto out;
	}
	/* our own key on this nexus, and a reservation that preempting leaves in place */
	o = fence_pr_out(ctx, ib, SCSI_PERSISTENT_RESERVE_REGISTER_AND_IGNORE_EXISTING_KEY, 0, own,
			 deadline, why, sizeof(why));
	if (o == IB_PR_OK)
		o = fence_pr_out(ctx, ib, SCSI_PERSISTENT_RESERVE_RESERVE, own, 0, deadline, why,
				 sizeof(why));
	for (size_t i = 0; i < n && (o == IB_PR_OK || o == IB_PR_ALREADY); i++) {
		o = fence_pr_out(ctx, ib, SCSI_PERSISTENT_RESERVE_PREEMPT, own, keys[i], deadline,
				 why, sizeof(why));
		if (o == IB_PR_OK)
			GW_NOTICE(IB_COMP, "%s: preempted reservation key 0x%016" PRIx64 ": that node "
				  "can no longer write to the backend LUN", ib->bdev.name, keys[i]);
		else if (o == IB_PR_ALREADY)
			GW_NOTICE(IB_COMP, "%s: reservation key 0x%016" PRIx64 " is not registered "
				  "(already preempted): fenced", ib->bdev.name, keys[i]);
	}
	if (o == IB_PR_UNSUPPORTED) {
		if (!atomic_exchange(&ib->pr_unsupported, true))
			GW_WARN(IB_COMP, "%s: the backend does not do persistent reservations (%s): no "
				"fencing at the backend for this LUN, the lease is the only guard "
				"against a stale node's writes", ib->bdev.name, why);
		rc = -EOPNOTSUPP;
		goto out_quiet;
	}
	rc = o == IB_PR_OK || o == IB_PR_ALREADY ? 0 : -EIO;
out:
	if (rc)
		GW_ERR(IB_COMP, "%s: fencing at the backend failed: %s", ib->bdev.name, why);
out_quiet:
	iscsi_destroy_context(ctx);
	return rc;
}

#endif /* ISERGW_HAVE_LIBISCSI */
