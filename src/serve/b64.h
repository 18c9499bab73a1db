/* src/serve/b64.h — standard base64 (RFC 4648 section 4: A-Z a-z 0-9 + /,
 * '=' padding, no line breaks), the encoding of `encoding_format: base64`
 * embeddings (little-endian f32 bytes). Pure; any thread. Held to an
 * independent reference and a round trip by tests/fuzz/fuzz_base64.c.
 * Internal to src/serve. */
#ifndef ANYTIME_SERVE_B64_H
#define ANYTIME_SERVE_B64_H

#include <stddef.h>

/* p[0..n) in base64, NUL-terminated: (n + 2) / 3 * 4 characters. The
 * caller frees it with free(). NULL when out of memory. */
char *serve_b64_encode(const unsigned char *p, size_t n);

#endif
