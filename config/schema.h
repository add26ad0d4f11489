/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration's schema: one field table per JSON object, defined once
 * in config_fields.c and read by every checker of that JSON: isergwd's
 * parser (config.c), the HA agent's document checks (ha/doc_config.c), the
 * REST bodies (mgmt/api/rest_schema.c) and the test that holds
 * mgmt/openapi.json to them (tests/unit/test_config_schema.c). A key is
 * added in one place.
 *
 * Each field: its key, its JSON type, whether it is required, its range,
 * the kind of name it is (names.h: the one validator of that kind), the
 * words it may be, the table of its objects, a one-line doc, and how
 * isergwd's parser stores it. The cluster document's own objects (nodes,
 * their portals, floating portals, device groups) have tables too, checked
 * by the agent (their ranges and the words of their refusals are its own to
 * say; the tables give their keys, types and ranges).
 */
#ifndef ISERGW_CONFIG_SCHEMA_H
#define ISERGW_CONFIG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/names.h"

struct json_object;
struct gw_ftable;

/* A value's JSON type. */
enum gw_ftype {
	GW_FT_STRING,
	GW_FT_INTEGER,          /* in min..max */
	GW_FT_BOOLEAN,
	GW_FT_SIZE,             /* an integer or a size string ("4G"), at most max */
	GW_FT_OBJECT,           /* an object of table sub */
	GW_FT_ARRAY,            /* of objects of table sub; without sub, of values of type elem */
};

/* How isergwd's parser stores a value (config.c, config_fields.c). */
enum gw_fkind {
	GW_FK_UINT,             /* JSON integer into a uint16/32 or unsigned int, [min, max] */
	GW_FK_BOOL,
	GW_FK_STR,              /* into a char[size]; min = 1: must not be empty */
	GW_FK_SIZE,             /* integer or "1G"-style string into a uint64_t */
	GW_FK_OBJ,              /* nested object described by sub */
	GW_FK_ARRAY,            /* objects of table sub into a malloc'd array (below) */
	GW_FK_CUSTOM,           /* fn(ctx, value, base) */
	GW_FK_NONE,             /* not isergwd's: a key of the cluster document only */
};

struct gw_field {
	const char *key;
	enum gw_ftype type;
	bool required;
	uint64_t min, max;      /* integers (of an array too): the range; strings: min 1, not empty */
	bool is_name;           /* a name of kind name, checked by gw_name_check() */
	enum gw_name_kind name;
	const char *const *words; /* a string that is one of these (NULL-terminated) */
	enum gw_ftype elem;     /* an array without sub: its values' type */
	const struct gw_ftable *sub;
	bool cluster;           /* the cluster document's "gateway" object may set it */
	const char *doc;        /* one line (docs/configuration.md has the rest) */
	/* isergwd's parser */
	enum gw_fkind kind;
	size_t off;
	size_t size;
	int (*fn)(struct gw_vctx *c, struct json_object *v, void *base);
	/*
	 * GW_FK_ARRAY: the array (a pointer at off to elements of size bytes)
	 * and its count (a size_t at count_off); each element set up by init
	 * before its object is parsed; more than max_items (0: any number)
	 * refused as too many of many.
	 */
	size_t count_off;
	size_t max_items;
	const char *many;
	void (*init)(void *el, size_t idx);
};

struct gw_ftable {
	const struct gw_field *f;
	size_t n;
};

/* isergwd's configuration file (docs/configuration.md) */
extern const struct gw_ftable gw_schema_config;         /* the top level */
extern const struct gw_ftable gw_schema_portal;         /* portals[] */
extern const struct gw_ftable gw_schema_target;         /* targets[] */
extern const struct gw_ftable gw_schema_lun;            /* targets[].luns[] */
extern const struct gw_ftable gw_schema_acl;            /* targets[].acls[] */
extern const struct gw_ftable gw_schema_chap;           /* chap, mutual_chap, discovery_chap */
extern const struct gw_ftable gw_schema_port_group;     /* port_groups[] */
extern const struct gw_ftable gw_schema_device_group;   /* device_groups[] */
/* the cluster document's own (docs/ha-config.md) */
extern const struct gw_ftable gw_schema_cluster;        /* the top level */
extern const struct gw_ftable gw_schema_node;           /* nodes[] */
extern const struct gw_ftable gw_schema_node_portal;    /* nodes[].portals[] */
extern const struct gw_ftable gw_schema_floating_portal; /* floating_portals[] */
extern const struct gw_ftable gw_schema_cluster_dg;     /* device_groups[] */

/* The field of t named key (len bytes), or NULL. */
const struct gw_field *gw_field_find(const struct gw_ftable *t, const char *key, size_t len);

#endif
