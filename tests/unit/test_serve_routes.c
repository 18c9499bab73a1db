/* tests/unit/test_serve_routes.c — the route table (src/serve/routes.c)
 * against docs/api.md: every route the server answers is documented as
 * "METHOD /path", and every "METHOD /path" the document names is a route,
 * so neither can gain or lose a route without the other. Also: no route
 * twice; only the health probes and /metrics answer without an API key;
 * and each route's conformance table in docs/api.md ("## Conformance",
 * "### `METHOD /path`", one row per body member) names exactly the members
 * the route's list (src/serve/fields.c) holds — the members its parser
 * reads, every other being refused — both ways. */
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

/* The conformance section's table for `METHOD PATH`: the first-column
 * `names` of its rows, into names[] (at most cap); the count, or -1 when
 * the section has no such heading. */
static int doc_fields(const char *doc, const char *method, const char *path, char names[][64],
                      int cap) {
  const char *sec = strstr(doc, "\n## Conformance");
  if (!sec) fail_msg("docs/api.md has no \"## Conformance\" section");
  char head[256];
  snprintf(head, sizeof head, "\n### `%s %s`\n", method, path);
  const char *h = strstr(sec, head);
  if (!h) return -1;
  const char *end = strstr(h + 1, "\n#"); /* the next heading */
  int n = 0;
  for (const char *l = strstr(h, "\n| `"); l && (!end || l < end); l = strstr(l + 1, "\n| `")) {
    const char *s = l + 4, *e = strchr(s, '`');
    if (!e || e - s >= 64 || n >= cap) fail_msg("bad row under %s", head + 1);
    memcpy(names[n], s, (size_t)(e - s));
    names[n][e - s] = '\0';
    n++;
  }
  return n;
}

static void test_conformance_tables(void **state) {
  (void)state;
  size_t n;
  const serve_route *t = serve_routes(&n);
  char *doc = read_doc();
  int checked = 0;
  for (size_t i = 0; i < n; i++) {
    char names[64][64];
    int k = doc_fields(doc, t[i].method, t[i].path, names, 64);
    if (!t[i].fields) {
      if (k >= 0) fail_msg("docs/api.md has a conformance table for %s %s, which checks no "
                           "fields", t[i].method, t[i].path);
      continue;
    }
    if (k < 0) fail_msg("%s %s has no conformance table in docs/api.md", t[i].method, t[i].path);
    for (const char *const *f = t[i].fields; *f; f++) {
      bool found = false;
      for (int d = 0; d < k && !found; d++) found = !strcmp(names[d], *f);
      if (!found) fail_msg("%s %s reads \"%s\", which its conformance table lacks", t[i].method,
                           t[i].path, *f);
    }
    for (int d = 0; d < k; d++) {
      const char *const *f = t[i].fields;
      while (*f && strcmp(*f, names[d])) f++;
      if (!*f) fail_msg("the conformance table of %s %s names \"%s\", which the route does "
                        "not read", t[i].method, t[i].path, names[d]);
    }
    checked++;
  }
  /* every table in the section is a route's */
  const char *sec = strstr(doc, "\n## Conformance");
  int tables = 0;
  for (const char *h = strstr(sec, "\n### `"); h; h = strstr(h + 1, "\n### `")) tables++;
  if (tables != checked) fail_msg("docs/api.md has %d conformance tables for %d routes with "
                                  "field lists", tables, checked);
  assert_true(checked >= 3);
  free(doc);
}

static void test_open_routes(void **state) {
  (void)state;
  assert_true(serve_route_open("/health"));
  assert_true(serve_route_open("/v2/health/live"));
  assert_true(serve_route_open("/v2/health/ready"));
  assert_true(serve_route_open("/metrics")); /* scrapers send no key (metrics_need_key: server.c) */
  static const char *const closed[] = {"/metrics/", "/info", "/predict", "/v1/models",
                                       "/v2/models/x/ready", "/v2/models/x", "/health/",
                                       "/healthz", "", "/v2/health/ready/x"};
  for (size_t i = 0; i < sizeof closed / sizeof *closed; i++)
    if (serve_route_open(closed[i])) fail_msg("%s answers without a key", closed[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_matches_docs),
      cmocka_unit_test(test_open_routes),
      cmocka_unit_test(test_conformance_tables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
