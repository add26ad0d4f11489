/* SPDX-License-Identifier: Apache-2.0 */
// LINK: isergw_config isergw_common
// COVERS: config/config.c
/*
 * isergwd's JSON configuration (util/config.c): the file as isergwd reads it
 * (gw_config_load_string, then the store checks by spelling), and the same
 * text as a reload over the first one (gw_config_load_string_base) with
 * the fencing difference between the two. The first byte picks which
 * (so a corpus entry is one byte of mode and the JSON text).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	gw_log_set_level(GW_LOG_ERR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_config *c = NULL, *c2 = NULL;
	char err[512];
	uint64_t keys[GW_PR_FENCE_MAX];
	char *json;
	uint8_t mode;

	if (size < 1)
		return 0;
	mode = data[0];
	json = malloc(size);
	if (!json)
		return 0;
	memcpy(json, data + 1, size - 1);
	json[size - 1] = '\0';
	if (gw_config_load_string(json, &c, err, sizeof(err)) == 0) {
		(void)gw_config_check_stores(c, err, sizeof(err));
		if (mode & 1) {
			/* a reload: the same text over the loaded file's settings */
			if (gw_config_load_string_base(json, c, &c2, err, sizeof(err)) == 0) {
				(void)gw_config_fence_new(c, c2, keys);
				(void)gw_config_fence_new(NULL, c2, keys);
				gw_config_free(c2);
			}
		}
		gw_config_free(c);
	}
	free(json);
	return 0;
}
