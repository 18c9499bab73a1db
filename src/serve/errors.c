/* src/serve/errors.c — error bodies per protocol (errors.h). Every error
 * answer the HTTP server sends is written here: serve_error() and
 * serve_prepare_error() (server.c), the planner's and the generation
 * lane's refusals, and a streamed completion's error event. */
#include "serve/errors.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool under(const char *url, const char *prefix) {
  size_t n = strlen(prefix);
  return !strncmp(url, prefix, n) && (url[n] == '\0' || url[n] == '/');
}

serve_proto serve_proto_of(const char *url) {
  if (!url) return SERVE_PROTO_TEI;
  if (under(url, "/v1")) return SERVE_PROTO_OPENAI;
  if (under(url, "/v2")) return SERVE_PROTO_V2;
  return SERVE_PROTO_TEI;
}

const char *serve_error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

const char *serve_error_code(int status) {
  switch (status) {
    case 400: return "invalid_request";
    case 401: return "invalid_api_key";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "request_too_large";
    case 422: return "unprocessable";
    case 429: return "rate_limit_exceeded";
    case 499: return "client_closed_request";
    case 503: return "service_unavailable";
    default: return status >= 500 ? "internal_error" : "invalid_request";
  }
}

const char *serve_tei_error_type(int status) {
  switch (status) {
    case 401: return "Unauthorized";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 429: return "Overloaded";
    case 503: return "Unhealthy";
    default: return status >= 500 ? "Backend" : "Validation";
  }
}

/* Length of the well-formed UTF-8 sequence at s (n bytes left), 0 if it
 * is not one (RFC 3629: no overlongs, no surrogates, nothing past
 * U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (len == 0 || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (c == 0xe0 && s[1] < 0xa0) return 0; /* overlong */
  if (c == 0xed && s[1] >= 0xa0) return 0; /* surrogate */
  if (c == 0xf0 && s[1] < 0x90) return 0; /* overlong */
  if (c == 0xf4 && s[1] >= 0x90) return 0; /* past U+10FFFF */
  return len;
}

/* `v` as a JSON string (quotes included) at out; returns the bytes written.
 * out has room for 6 * strlen(v) + 2. A byte that starts no well-formed
 * UTF-8 sequence (a client's bytes quoted back) becomes U+FFFD. */
static size_t json_str(char *out, const char *v) {
  const unsigned char *p = (const unsigned char *)v;
  size_t n = strlen(v), o = 0;
  out[o++] = '"';
  for (size_t i = 0; i < n;) {
    unsigned c = p[i];
    if (c == '"' || c == '\\') {
      out[o++] = '\\', out[o++] = (char)c, i++;
    } else if (c < 0x20) {
      o += (size_t)sprintf(out + o, "\\u%04x", c), i++;
    } else {
      size_t k = utf8_seq(p + i, n - i);
      if (k == 0) {
        memcpy(out + o, "\\ufffd", 6), o += 6, i++;
      } else {
        memcpy(out + o, p + i, k), o += k, i += k;
      }
    }
  }
  out[o++] = '"';
  return o;
}

/* Written by hand, not with a JSON library: under overload a refusal is
 * the server's most frequent answer. */
char *serve_error_body(serve_proto p, int status, const char *code, const char *param,
                       const char *msg, size_t *len) {
  if (!msg) msg = "";
  if (!code) code = serve_error_code(status);
  size_t cap = 6 * (strlen(msg) + strlen(code) + (param ? strlen(param) : 0)) + 160;
  char *b = malloc(cap);
  if (!b) return NULL;
  size_t o = 0;
  if (p == SERVE_PROTO_OPENAI) {
    o += (size_t)sprintf(b + o, "{\"error\":{\"message\":");
    o += json_str(b + o, msg);
    o += (size_t)sprintf(b + o, ",\"type\":\"%s\",\"param\":", serve_error_type(status));
    if (param) o += json_str(b + o, param);
    else o += (size_t)sprintf(b + o, "null");
    o += (size_t)sprintf(b + o, ",\"code\":");
    o += json_str(b + o, code);
    o += (size_t)sprintf(b + o, "}}");
  } else {
    o += (size_t)sprintf(b + o, "{\"error\":");
    o += json_str(b + o, msg);
    if (p == SERVE_PROTO_TEI)
      o += (size_t)sprintf(b + o, ",\"error_type\":\"%s\"", serve_tei_error_type(status));
    b[o++] = '}';
  }
  b[o] = '\0';
  *len = o;
  return b;
}
