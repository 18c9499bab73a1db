/* tests/unit/test_serve_metrics.c — the Prometheus renderer
 * (src/serve/metrics.c): request series carry their protocol; the extra
 * lines a server adds (planner and generation gauges) come out whole however
 * long they are — a server with many models needs more than the first
 * buffer, and they used to be dropped, silently, past 128 KiB. */
#include <stdlib.h>
#include <string.h>

#include "serve/metrics.h"
#include "testutil.h"

/* Writes `want` bytes of gauge lines, or reports cap when they do not fit. */
static size_t big_extra(void *user, char *buf, size_t cap) {
  size_t want = *(size_t *)user, o = 0;
  if (want >= cap) return cap;
  while (o + 32 <= want) o += (size_t)snprintf(buf + o, cap - o, "g{i=\"%018zu\"} 1.000\n", o);
  return o;
}

static void test_extra_lines_any_length(void **state) {
  (void)state;
  at_metrics *m = at_metrics_create();
  assert_non_null(m);
  at_metrics_request(m, "grpc", "/inference.GRPCInferenceService/ModelInfer", "tiny", "a", 200,
                     0.001, 0, 0.001, 0);
  at_metrics_request(m, "http", "/predict", "tiny", "a", 429, 0.001, -1, -1, -1);
  static const size_t sizes[] = {100, 1u << 16, 1u << 18, 3u << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t want = sizes[k], len = 0;
    char *text = at_metrics_render(m, 0, big_extra, &want, &len);
    assert_non_null(text);
    assert_non_null(strstr(text, "anytime_requests_total{route=\"/inference.GRPCInferenceService/"
                                 "ModelInfer\",model=\"tiny\",variant=\"a\",status=\"200\","
                                 "protocol=\"grpc\"} 1\n"));
    assert_non_null(strstr(text, "route=\"/predict\",model=\"tiny\",variant=\"a\",status=\"429\","
                                 "protocol=\"http\"} 1\n"));
    /* the last gauge line the extra wrote is there */
    size_t last = (want / 32 - 1) * 32;
    char line[64];
    snprintf(line, sizeof line, "g{i=\"%018zu\"} 1.000\n", last);
    if (!strstr(text, line)) fail_msg("%zu bytes of extra lines: the last is missing", want);
    free(text);
  }
  at_metrics_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_extra_lines_any_length),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
