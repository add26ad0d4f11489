/* SPDX-License-Identifier: Apache-2.0 */
#include "common/utf8.h"

size_t gw_utf8_next(const unsigned char *s, size_t len, size_t i, uint32_t *cp)
{
	unsigned char c = s[i], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		*cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		*cp = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0;      /* overlong below U+0800 */
		else if (c == 0xed)
			hi = 0x9f;      /* U+D800..U+DFFF: surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		*cp = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;      /* overlong below U+10000 */
		else if (c == 0xf4)
			hi = 0x8f;      /* above U+10FFFF */
	} else {
		return 0;               /* 0x80..0xc1 (continuation, overlong), 0xf5.. */
	}
	if (len - i < n)
		return 0;
	for (size_t k = 1; k < n; k++) {
		unsigned char b = s[i + k];

		if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf))
			return 0;
		*cp = (*cp << 6) | (b & 0x3f);
	}
	return n;
}
