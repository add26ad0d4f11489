/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For a test program that replaces util/log.c and wants no log output:
 * gw_log prints nothing, gw_log_get_level answers TEST_LOG_LEVEL (define it
 * before including this to let more through the callers' level checks;
 * default GW_LOG_ERR). Included by exactly one file of a program.
 */
#ifndef TEST_LOG_SILENT_H
#define TEST_LOG_SILENT_H

#include "common/log.h"

#ifndef TEST_LOG_LEVEL
#define TEST_LOG_LEVEL GW_LOG_ERR
#endif

void gw_log(enum gw_log_level lvl, const char *comp, const char *fmt, ...)
{
	(void)lvl;
	(void)comp;
	(void)fmt;
}

enum gw_log_level gw_log_get_level(void)
{
	return TEST_LOG_LEVEL;
}

#endif
