/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Protobuf messages through their descriptors, for the commands that are
 * rows of a table: a request's operation and its fields set by name
 * (isergwctl_pb_new, isergwctl_pb_set), and a reply as JSON for --json:
 * every field of a message under its name in the .proto (the cluster
 * commands print the agent's replies so), or the fields a list names, in
 * its order and under its keys (the control socket's commands keep their
 * documents' shape). The JSON numbers and strings are the fields' values as
 * they are.
 */
#include <errno.h>
#include <json-c/json.h>
#include <protobuf-c/protobuf-c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isergwctl.h"

/* Element k of a field's value(s) at p, as JSON (a message: its fields as fields says). */
static json_object *value_json(const ProtobufCFieldDescriptor *f, const void *p, size_t k,
			       const struct isergwctl_jfield *fields)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		return json_object_new_boolean(((const protobuf_c_boolean *)p)[k]);
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return json_object_new_int(((const int32_t *)p)[k]);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return json_object_new_int64(((const uint32_t *)p)[k]);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return json_object_new_int64(((const int64_t *)p)[k]);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return json_object_new_uint64(((const uint64_t *)p)[k]);
	case PROTOBUF_C_TYPE_FLOAT:
		return json_object_new_double(((const float *)p)[k]);
	case PROTOBUF_C_TYPE_DOUBLE:
		return json_object_new_double(((const double *)p)[k]);
	case PROTOBUF_C_TYPE_ENUM: {
		int v = ((const int *)p)[k];
		const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, v);

		return ev ? json_object_new_string(ev->name) : json_object_new_int(v);
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = ((const char *const *)p)[k];

		return json_object_new_string(s ? s : "");
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = &((const ProtobufCBinaryData *)p)[k];
		char *hex = malloc(2 * b->len + 1);
		json_object *o;

		if (!hex)
			return NULL;
		for (size_t i = 0; i < b->len; i++)
			snprintf(hex + 2 * i, 3, "%02x", b->data[i]);
		hex[2 * b->len] = '\0';
		o = json_object_new_string(hex);
		free(hex);
		return o;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *sub = ((const ProtobufCMessage *const *)p)[k];

		return sub ? isergwctl_pb_json(sub, fields) : NULL;
	}
	}
	return NULL;
}

/* Field f of m as JSON: its value, or an array of them (repeated); NULL: an absent message. */
static json_object *field_json(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
			       const struct isergwctl_jfield *fields)
{
	const char *base = (const char *)m;
	const void *member = base + f->offset;
	json_object *arr;
	size_t n;

	if (f->label != PROTOBUF_C_LABEL_REPEATED)
		return value_json(f, member, 0, fields);
	n = *(const size_t *)(const void *)(base + f->quantifier_offset);
	arr = json_object_new_array();
	member = *(const void *const *)member;
	for (size_t k = 0; k < n; k++)
		json_object_array_add(arr, value_json(f, member, k, fields));
	return arr;
}

void isergwctl_pb_json_add(json_object *o, const ProtobufCMessage *m,
			   const struct isergwctl_jfield *fields)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;

	if (!fields) {
		for (unsigned int i = 0; i < d->n_fields; i++) {
			const ProtobufCFieldDescriptor *f = &d->fields[i];

			if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
			    *(const uint32_t *)(const void *)(base + f->quantifier_offset) != f->id)
				continue;
			json_object_object_add(o, f->name, field_json(m, f, NULL));
		}
		return;
	}
	for (; fields->name; fields++) {
		const ProtobufCFieldDescriptor *f;
		json_object *v;

		f = protobuf_c_message_descriptor_get_field_by_name(d, fields->name);
		v = f ? field_json(m, f, fields->fields) : NULL;
		if (v)
			json_object_object_add(o, fields->key ? fields->key : fields->name, v);
	}
}

json_object *isergwctl_pb_json(const ProtobufCMessage *m, const struct isergwctl_jfield *fields)
{
	json_object *o = json_object_new_object();

	isergwctl_pb_json_add(o, m, fields);
	return o;
}

/* ------------------------------------------------------------ setting fields */

ProtobufCMessage *isergwctl_pb_new(const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = malloc(d->sizeof_message);

	if (m)
		protobuf_c_message_init(d, m);
	return m;
}

int isergwctl_pb_set(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, const void *p,
		     uint32_t n)
{
	void *member;

	if (!f || f->label == PROTOBUF_C_LABEL_REPEATED)
		return -EINVAL;
	member = (char *)m + f->offset;
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		memcpy(member, &p, sizeof(p));
		break;
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)member = n != 0;
		break;
	case PROTOBUF_C_TYPE_UINT32:
		*(uint32_t *)member = n;
		break;
	default:
		return -EINVAL;
	}
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)(void *)((char *)m + f->quantifier_offset) = f->id;
	return 0;
}

int isergwctl_pb_set_name(ProtobufCMessage *m, const char *name, const void *p, uint32_t n)
{
	if (!m)
		return -EINVAL;
	return isergwctl_pb_set(m, protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name),
				p, n);
}

ProtobufCMessage *isergwctl_pb_op_new(ProtobufCMessage *req, unsigned int op)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(req->descriptor, op);
	ProtobufCMessage *m = f && f->type == PROTOBUF_C_TYPE_MESSAGE ? isergwctl_pb_new(f->descriptor) :
									 NULL;

	if (!m) {
		fprintf(stderr, "isergwctl: %s\n", f ? "out of memory" : "no such operation");
		return NULL;
	}
	(void)isergwctl_pb_set(req, f, m, 0);
	return m;
}

ProtobufCMessage *isergwctl_pb_op(const ProtobufCMessage *req, unsigned int op)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(req->descriptor, op);
	ProtobufCMessage *m;

	if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE)
		return NULL;
	memcpy(&m, (const char *)req + f->offset, sizeof(m));
	return m;
}
