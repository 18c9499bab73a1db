/* tests/unit/test_serve_errors.c — the error bodies (src/serve/errors.c),
 * read back with jansson (an independent JSON parser): OpenAI's nested
 * object with message/type/param/code for /v1 paths, KServe V2's bare
 * {"error"} for /v2 paths, TEI's {"error", "error_type"} for the rest;
 * the type and code each status implies; and a message with quotes,
 * control characters and bytes that are not UTF-8 still gives valid JSON
 * that keeps every valid character. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "serve/errors.h"
#include "testutil.h"

/* The body for (p, status, code, param, msg), parsed; fails the test when
 * it is not one JSON object. */
static json_t *body(serve_proto p, int status, const char *code, const char *param,
                    const char *msg) {
  size_t len = 0;
  char *s = serve_error_body(p, status, code, param, msg, &len);
  assert_non_null(s);
  assert_int_equal(strlen(s), len);
  json_error_t e;
  json_t *j = json_loadb(s, len, JSON_REJECT_DUPLICATES, &e);
  if (!j) fail_msg("not JSON (%s): %s", e.text, s);
  assert_true(json_is_object(j));
  free(s);
  return j;
}

static void test_protocol_of_path(void **state) {
  (void)state;
  assert_int_equal(serve_proto_of("/v1/embeddings"), SERVE_PROTO_OPENAI);
  assert_int_equal(serve_proto_of("/v1/no-such-route"), SERVE_PROTO_OPENAI);
  assert_int_equal(serve_proto_of("/v1"), SERVE_PROTO_OPENAI);
  assert_int_equal(serve_proto_of("/v2/models/m/infer"), SERVE_PROTO_V2);
  assert_int_equal(serve_proto_of("/v2"), SERVE_PROTO_V2);
  assert_int_equal(serve_proto_of("/v10/x"), SERVE_PROTO_TEI);
  assert_int_equal(serve_proto_of("/v1x"), SERVE_PROTO_TEI);
  assert_int_equal(serve_proto_of("/predict"), SERVE_PROTO_TEI);
  assert_int_equal(serve_proto_of("/metrics"), SERVE_PROTO_TEI);
  assert_int_equal(serve_proto_of(NULL), SERVE_PROTO_TEI);
}

static void test_openai_shape(void **state) {
  (void)state;
  json_t *j = body(SERVE_PROTO_OPENAI, 404, "model_not_found", "model", "model 'x' is not served");
  assert_int_equal(json_object_size(j), 1);
  json_t *e = json_object_get(j, "error");
  assert_true(json_is_object(e));
  assert_int_equal(json_object_size(e), 4);
  assert_string_equal(json_string_value(json_object_get(e, "message")), "model 'x' is not served");
  assert_string_equal(json_string_value(json_object_get(e, "type")), "invalid_request_error");
  assert_string_equal(json_string_value(json_object_get(e, "param")), "model");
  assert_string_equal(json_string_value(json_object_get(e, "code")), "model_not_found");
  json_decref(j);
  /* no code or param given: the status's code, param null */
  static const struct { int status; const char *type, *code; } want[] = {
      {400, "invalid_request_error", "invalid_request"},
      {401, "authentication_error", "invalid_api_key"},
      {404, "invalid_request_error", "not_found"},
      {413, "invalid_request_error", "request_too_large"},
      {422, "invalid_request_error", "unprocessable"},
      {429, "rate_limit_error", "rate_limit_exceeded"},
      {500, "server_error", "internal_error"},
      {503, "server_error", "service_unavailable"},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    j = body(SERVE_PROTO_OPENAI, want[i].status, NULL, NULL, "m");
    e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "type")), want[i].type);
    assert_string_equal(json_string_value(json_object_get(e, "code")), want[i].code);
    assert_true(json_is_null(json_object_get(e, "param")));
    json_decref(j);
  }
}

static void test_v2_and_tei_shapes(void **state) {
  (void)state;
  json_t *j = body(SERVE_PROTO_V2, 400, "ignored", "ignored", "bad tensor");
  assert_int_equal(json_object_size(j), 1);
  assert_string_equal(json_string_value(json_object_get(j, "error")), "bad tensor");
  json_decref(j);
  static const struct { int status; const char *type; } want[] = {
      {400, "Validation"}, {413, "Validation"}, {422, "Validation"}, {429, "Overloaded"},
      {500, "Backend"},    {503, "Unhealthy"},  {401, "Unauthorized"}, {404, "NotFound"},
      {405, "MethodNotAllowed"},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    j = body(SERVE_PROTO_TEI, want[i].status, NULL, NULL, "why");
    assert_int_equal(json_object_size(j), 2);
    assert_string_equal(json_string_value(json_object_get(j, "error")), "why");
    assert_string_equal(json_string_value(json_object_get(j, "error_type")), want[i].type);
    json_decref(j);
  }
}

static void test_hostile_messages(void **state) {
  (void)state;
  /* quotes, backslashes, control characters, valid multibyte text */
  const char *msg = "a \"quoted\" \\path\\ \n\t\x01 caf\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80";
  for (int p = SERVE_PROTO_TEI; p <= SERVE_PROTO_V2; p++) {
    json_t *j = body((serve_proto)p, 400, NULL, NULL, msg);
    json_t *m = json_object_get(j, "error");
    if (p == SERVE_PROTO_OPENAI) m = json_object_get(m, "message");
    assert_string_equal(json_string_value(m), msg);
    json_decref(j);
  }
  /* bytes that start no UTF-8 sequence, a truncated sequence, an overlong
   * form, a surrogate: each becomes U+FFFD, the rest is kept */
  const char *bad = "x\xff" "y\xc3" "z\xc0\xaf" "w\xed\xa0\x80" "v\xf4\x90\x80\x80" "u";
  json_t *j = body(SERVE_PROTO_TEI, 400, NULL, NULL, bad);
  const char *got = json_string_value(json_object_get(j, "error"));
  assert_non_null(got);
  assert_non_null(strstr(got, "x\xef\xbf\xbdy\xef\xbf\xbdz"));
  assert_true(got[strlen(got) - 1] == 'u');
  json_decref(j);
  /* an empty and a long message */
  j = body(SERVE_PROTO_OPENAI, 500, NULL, NULL, "");
  json_decref(j);
  char *longmsg = malloc(100001);
  assert_non_null(longmsg);
  memset(longmsg, '"', 100000);
  longmsg[100000] = '\0';
  j = body(SERVE_PROTO_OPENAI, 400, NULL, NULL, longmsg);
  assert_int_equal(strlen(json_string_value(json_object_get(json_object_get(j, "error"),
                                                            "message"))), 100000);
  json_decref(j);
  free(longmsg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_protocol_of_path),
      cmocka_unit_test(test_openai_shape),
      cmocka_unit_test(test_v2_and_tei_shapes),
      cmocka_unit_test(test_hostile_messages),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
