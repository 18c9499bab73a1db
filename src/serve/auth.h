/* src/serve/auth.h — who may call the server: a set of API keys, and the
 * check of a request's `Authorization: Bearer KEY` header against it in
 * constant time. Keys come from the configuration (--api-key, repeatable;
 * ANYTIME_API_KEY; server.api_key_file: one key per line, '#' comments).
 * Only SHA-256 digests of the keys are kept; a presented key is hashed and
 * compared with every stored digest without an early exit, so neither the
 * position of a mismatch nor which key matched shows in the time taken.
 * Internal to src/serve. A set is built once, then read by any thread. */
#ifndef ANYTIME_SERVE_AUTH_H
#define ANYTIME_SERVE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"

#define AUTH_MAX_KEYS 64
#define AUTH_MIN_KEY_LEN 8
#define AUTH_MAX_KEY_LEN 512

typedef struct serve_auth {
  int n;                              /* 0: no keys, every request passes */
  uint8_t digest[AUTH_MAX_KEYS][32];
} serve_auth;

/* Add one key (len bytes). Keys are 8..512 printable ASCII characters
 * without spaces. Returns AT_OK, AT_ERR_INVALID_ARG (a key of another
 * shape: the detail says which rule, never the key) or AT_ERR_LIMIT. */
at_status serve_auth_add(serve_auth *a, const char *key, size_t len);

/* Add every key in a file's text: one per line, surrounding white space
 * ignored, blank lines and lines starting with '#' skipped. `label` names
 * the file in errors ("line 3: ..."). */
at_status serve_auth_add_text(serve_auth *a, const char *text, size_t len, const char *label);

/* Whether a request with this Authorization header value (NULL: none) may
 * pass: true when the set is empty, or the value is "Bearer KEY" (scheme
 * case-insensitive, one or more spaces) for a key in the set. */
bool serve_auth_check(const serve_auth *a, const char *header);

#endif
