/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The export macros of the gateway's libraries (gw_backend, gw_scsi,
 * gw_proto, gw_core, gw_dm). They are built with -fvisibility=hidden: what a
 * library's public header declares between GW_API_BEGIN and GW_API_END (or
 * marks GW_API) is its API, with default visibility; everything else, such
 * as what its *_internal.h or *_int.h headers declare for its own files, is
 * hidden, and a file's own helpers are static.
 */
#ifndef ISERGW_GW_API_H
#define ISERGW_GW_API_H

#define GW_API __attribute__((visibility("default")))
#define GW_API_BEGIN _Pragma("GCC visibility push(default)")
#define GW_API_END _Pragma("GCC visibility pop")

#endif
