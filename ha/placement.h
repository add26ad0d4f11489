/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placement: which node owns each device group (docs/ha-config.md,
 * "Placement"). A pure function of the document, the eligible nodes and the
 * current owners, so every agent computes the same owners without a leader.
 */
#ifndef ISERGW_HA_PLACEMENT_H
#define ISERGW_HA_PLACEMENT_H

#include <stdbool.h>

#include "doc.h"

/*
 * The owners of every device group after a membership change, a drain or
 * undrain, or a configuration change. Deterministic: the same inputs give the
 * same owners on every node. eligible[n]: node n is live, synchronised and
 * not drained. owner_in/owner_out: per dg, node index or -1 (owner_in entries
 * outside -1..nnodes-1 count as -1); they may be the same array. Returns the
 * number of device groups whose owner changed, or -EINVAL on bad arguments.
 *
 * Device groups in config order:
 *   1. failback immediate and the preferred owner eligible: the preferred owner;
 *   2. the current owner eligible: keep it (fewest moves);
 *   3. the preferred owner eligible: it;
 *   4. otherwise the least loaded eligible node, ties to the lowest index
 *      (load = device groups it owns in the result so far: rules 1-3 of all
 *      device groups first, then the orphans one by one);
 *   5. no eligible node: -1 (none).
 */
int ha_place(const struct ha_doc *d, const bool *eligible, const int *owner_in, int *owner_out);
/*
 * The same with eligibility per device group: eligible[g * nnodes + n] says
 * whether node n may own device group g (the data plane's health, docs/ha.md).
 */
int ha_place_each(const struct ha_doc *d, const bool *eligible, const int *owner_in,
		  int *owner_out);

/* The number of device groups that owner[] (per dg) gives to node. */
int ha_place_load(const struct ha_doc *d, const int *owner, int node);

#endif
