/* tests/unit/test_serve_routes.c — the route table (src/serve/routes.c)
 * against docs/api.md: every route the server answers is documented as
 * "METHOD /path", and every "METHOD /path" the document names is a route,
 * so neither can gain or lose a route without the other. Also: no route
 * twice, and only the health probes answer without an API key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "serve/serve_internal.h"
#include "testutil.h"

static char *read_doc(void) {
  const char *path = test_source("docs/api.md");
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *doc = malloc((size_t)n + 1);
  assert_non_null(doc);
  assert_int_equal(fread(doc, 1, (size_t)n, f), (size_t)n);
  doc[n] = '\0';
  fclose(f);
  return doc;
}

static bool in_table(const serve_route *t, size_t n, const char *method, const char *path) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(t[i].method, method) && !strcmp(t[i].path, path)) return true;
  return false;
}

static void test_table_matches_docs(void **state) {
  (void)state;
  size_t n;
  const serve_route *t = serve_routes(&n);
  assert_true(n >= 18);
  char *doc = read_doc();
  for (size_t i = 0; i < n; i++) {
    char want[256];
    snprintf(want, sizeof want, "`%s %s`", t[i].method, t[i].path);
    if (!strstr(doc, want)) fail_msg("route %s %s is not in docs/api.md (as %s)", t[i].method,
                                     t[i].path, want);
    for (size_t k = 0; k < i; k++)
      if (!strcmp(t[k].method, t[i].method) && !strcmp(t[k].path, t[i].path))
        fail_msg("route %s %s is in the table twice", t[i].method, t[i].path);
  }
  /* every `METHOD /path` in the document is a route */
  static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "PATCH"};
  int named = 0;
  for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
    char key[16];
    snprintf(key, sizeof key, "`%s /", methods[m]);
    for (const char *p = strstr(doc, key); p; p = strstr(p + 1, key)) {
      const char *s = p + strlen(key) - 1, *e = s;
      while (*e && *e != '`' && *e != ' ') e++;
      if (*e != '`') continue; /* `POST /x body…`: prose, not a route name */
      char path[256];
      size_t len = (size_t)(e - s);
      assert_true(len < sizeof path);
      memcpy(path, s, len);
      path[len] = '\0';
      if (!in_table(t, n, methods[m], path))
        fail_msg("docs/api.md names `%s %s`, which the server does not answer", methods[m], path);
      named++;
    }
  }
  assert_true(named >= (int)n);
  free(doc);
}

static void test_open_routes(void **state) {
  (void)state;
  assert_true(serve_route_open("/health"));
  assert_true(serve_route_open("/v2/health/live"));
  assert_true(serve_route_open("/v2/health/ready"));
  static const char *const closed[] = {"/metrics", "/info", "/predict", "/v1/models",
                                       "/v2/models/x/ready", "/v2/models/x", "/health/",
                                       "/healthz", "", "/v2/health/ready/x"};
  for (size_t i = 0; i < sizeof closed / sizeof *closed; i++)
    if (serve_route_open(closed[i])) fail_msg("%s answers without a key", closed[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_matches_docs),
      cmocka_unit_test(test_open_routes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
