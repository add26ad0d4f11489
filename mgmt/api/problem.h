/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 9457 problem documents (application/problem+json) of isergw-api: type
 * about:blank, the status phrase as title, what went wrong as detail, and for
 * a refused request body the field at fault. Pure.
 */
#ifndef ISERGW_API_PROBLEM_H
#define ISERGW_API_PROBLEM_H

#include <stddef.h>

#define API_PROBLEM_TYPE "application/problem+json"

/*
 * The document for HTTP status code with title and detail, as one line of
 * JSON and a newline, malloc'd (*len without the NUL). NULL without memory.
 */
char *api_problem_json(unsigned int code, const char *title, const char *detail, size_t *len);
/*
 * The same with the extension member "field" (the request body's field at
 * fault, e.g. "luns[0].block_size") when field is neither NULL nor "", and
 * for a 422 whenever it is not NULL ("": the body as a whole, e.g. not an
 * object).
 */
char *api_problem_json_field(unsigned int code, const char *title, const char *detail,
			     const char *field, size_t *len);

#endif
