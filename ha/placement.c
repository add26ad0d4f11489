/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placement of device groups on nodes (placement.h, docs/ha-config.md).
 *
 * Two passes over the device groups in config order: the first settles every
 * group that keeps or gets a definite owner (rules 1-3) and counts the load
 * those give each node; the second hands the orphans out one by one to the
 * least loaded eligible node, ties to the lowest index.
 */
#include "placement.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ORPHAN (-2)

static int node_or_none(const struct ha_doc *d, int n)
{
	return n >= 0 && (size_t)n < d->nnodes ? n : -1;
}

static bool is_eligible(const struct ha_doc *d, const bool *eligible, int n)
{
	return n >= 0 && (size_t)n < d->nnodes && eligible[n];
}

/* Rules 1-3 for device group g: its owner, or ORPHAN. */
static int settled_owner(const struct ha_doc *d, const bool *elig, size_t g, int cur)
{
	const struct ha_dg *dg = &d->dgs[g];
	const bool *eligible = elig + g * d->nnodes;

	if (dg->failback == HA_FAILBACK_IMMEDIATE && is_eligible(d, eligible, dg->preferred))
		return dg->preferred;
	if (is_eligible(d, eligible, cur))
		return cur;
	if (is_eligible(d, eligible, dg->preferred))
		return dg->preferred;
	return ORPHAN;
}

/* The least loaded eligible node, the lowest index among equals; -1 when none. */
static int least_loaded(const struct ha_doc *d, const bool *eligible, const unsigned int *load)
{
	/* eligible: the device group's row */
	int best = -1;

	for (size_t n = 0; n < d->nnodes; n++)
		if (eligible[n] && (best < 0 || load[n] < load[best]))
			best = (int)n;
	return best;
}

int ha_place(const struct ha_doc *d, const bool *eligible, const int *owner_in, int *owner_out)
{
	bool *elig;
	int rc;

	if (!d || (d->nnodes && !eligible))
		return -EINVAL;
	elig = calloc(d->ndgs * d->nnodes + 1, sizeof(*elig));
	if (!elig)
		return -ENOMEM;
	for (size_t g = 0; g < d->ndgs; g++)
		memcpy(elig + g * d->nnodes, eligible, d->nnodes * sizeof(*elig));
	rc = ha_place_each(d, elig, owner_in, owner_out);
	free(elig);
	return rc;
}

int ha_place_each(const struct ha_doc *d, const bool *eligible, const int *owner_in,
		  int *owner_out)
{
	unsigned int load[HA_NODES_MAX] = { 0 };
	int orig[HA_DGS_MAX];
	int changed = 0;

	if (!d || (d->nnodes && !eligible) || (d->ndgs && (!owner_in || !owner_out)))
		return -EINVAL;
	if (d->nnodes > HA_NODES_MAX || d->ndgs > HA_DGS_MAX)
		return -EINVAL;

	for (size_t g = 0; g < d->ndgs; g++) {
		orig[g] = node_or_none(d, owner_in[g]);
		owner_out[g] = settled_owner(d, eligible, g, orig[g]);
		if (owner_out[g] >= 0)
			load[owner_out[g]]++;
	}
	for (size_t g = 0; g < d->ndgs; g++) {
		if (owner_out[g] == ORPHAN) {
			owner_out[g] = least_loaded(d, eligible + g * d->nnodes, load);
			if (owner_out[g] >= 0)
				load[owner_out[g]]++;
		}
		if (owner_out[g] != orig[g])
			changed++;
	}
	return changed;
}

int ha_place_load(const struct ha_doc *d, const int *owner, int node)
{
	int load = 0;

	if (!d || !owner)
		return 0;
	for (size_t g = 0; g < d->ndgs; g++)
		if (owner[g] == node)
			load++;
	return load;
}
