/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 9457 problem documents (application/problem+json) of isergw-api: type
 * about:blank, the status phrase as title, what went wrong as detail. Pure.
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

#endif
