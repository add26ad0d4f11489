/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The datamovers of this tree (core/datamover.h is their interface). Each
 * registers itself with the core at program start; their ops tables are
 * named here only for tests that drive or patch one directly.
 */
#ifndef ISERGW_DM_H
#define ISERGW_DM_H

#include "core/datamover.h"
#include "gw_api.h"

GW_API_BEGIN

extern struct gw_dm_ops gw_dm_tcp_ops;
extern struct gw_dm_ops gw_dm_iser_ops;   /* NULL name, not registered, without rdma-core */

GW_API_END

#endif
