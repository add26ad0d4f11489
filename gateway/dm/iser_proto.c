/* SPDX-License-Identifier: Apache-2.0 */
/* iSER header encoding and checks: pure code, unit tested without RDMA. */
#include <errno.h>

#include "core/iscsi_spec.h"
#include "dm/iser_spec.h"

int iser_hdr_decode(const void *buf, uint32_t len, struct iser_hdr_info *out, const char **why)
{
	struct iser_hdr h;

	if (len < sizeof(h) + ISCSI_BHS_LEN) {
		*why = "Send shorter than the iSER and iSCSI headers";
		return -EPROTO;
	}
	memcpy(&h, buf, sizeof(h));
	if ((h.flags & ISER_OPCODE_MASK) != ISER_OP_ISCSI_CTRL) {
		*why = (h.flags & ISER_OPCODE_MASK) == ISER_OP_HELLO ?
			"iSER Hello (not used over this transport)" : "unknown iSER opcode";
		return -EPROTO;
	}
	if (h.flags & ISER_FLAGS_RSVD || h.rsvd[0] || h.rsvd[1] || h.rsvd[2]) {
		*why = "reserved bits set in the iSER header";
		return -EPROTO;
	}
	out->wsv = h.flags & ISER_WSV;
	out->rsv = h.flags & ISER_RSV;
	out->write_stag = be32toh(h.write_stag);
	out->read_stag = be32toh(h.read_stag);
	out->write_va = be64toh(h.write_va);
	out->read_va = be64toh(h.read_va);
	if ((out->wsv && out->write_stag == 0) || (out->rsv && out->read_stag == 0)) {
		*why = "STag marked valid but zero";
		return -EPROTO;
	}
	return 0;
}

void iser_hdr_encode_ctrl(void *buf)
{
	struct iser_hdr h;

	memset(&h, 0, sizeof(h));
	h.flags = ISER_OP_ISCSI_CTRL;
	memcpy(buf, &h, sizeof(h));
}

static uint8_t cap_depth(uint8_t want, int dev_max)
{
	if (dev_max < 0)
		dev_max = 0;
	return (int)want < dev_max ? want : (uint8_t)(dev_max > 255 ? 255 : dev_max);
}

struct iser_cm_depths iser_cm_accept_depths(uint8_t req_initiator_depth,
					    uint8_t req_responder_resources,
					    int dev_max_qp_init_rd_atom, int dev_max_qp_rd_atom)
{
	struct iser_cm_depths d = {
		.initiator_depth = cap_depth(req_initiator_depth, dev_max_qp_init_rd_atom),
		.responder_resources = cap_depth(req_responder_resources, dev_max_qp_rd_atom),
	};

	return d;
}
