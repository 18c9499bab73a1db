/* tests/unit/test_serve_config.c — the configuration's one settings writer
 * (at_server_config_settings_yaml) against its parser: every server,
 * engine, batching and planner setting, set away from its default, is
 * written and parsed back to the same value; settings left to the
 * planner's defaults stay unset; and what the writer emits is a document
 * the parser accepts with no unknown key. `anytime sweep` and `anytime
 * profile` rewrite configurations through this writer: before it, the
 * sweep's cheap-only configuration silently dropped wait_quantile,
 * rate_basis and every other planner key it did not list. Then the key
 * table itself: every row round-trips, the docs name every key, and the
 * checks the table implies (whole numbers, choices, ranges), and the
 * length model's pair rule (len_cost_per_token x len_ref_tokens <= 1). */
#include <stdlib.h>
#include <string.h>

#include "anytime/server.h"
#include "serve/config_keys.h"
#include "testutil.h"

/* Only the settings sections: models, the generator and the cache dir are
 * written elsewhere. */
static void clear_other_sections(at_server_config *c) {
  c->n_models = 0;
  memset(c->models, 0, sizeof c->models);
  memset(&c->generator, 0, sizeof c->generator);
  memset(c->artifact_cache_dir, 0, sizeof c->artifact_cache_dir);
}

static at_server_config round_trip(const at_server_config *in, int max_batch) {
  char *yaml = at_server_config_settings_yaml(in, max_batch);
  assert_non_null(yaml);
  at_server_config out = at_server_config_default();
  at_status st = at_server_config_parse(yaml, strlen(yaml), NULL, &out);
  if (st != AT_OK) fail_msg("parse of the written settings failed: %s\n%s", at_last_error(), yaml);
  free(yaml);
  clear_other_sections(&out);
  return out;
}

static void test_every_setting_round_trips(void **state) {
  (void)state;
  at_server_config c = at_server_config_default();
  snprintf(c.host, sizeof c.host, "0.0.0.0");
  c.port = 9123;
  c.http_threads = 3;
  c.max_body_bytes = 123456;
  c.max_inputs = 17;
  c.max_tokens = 99;
  c.max_queued = 777;
  c.hold_early_retries = false;
  c.workers = 5;
  c.intra_op_threads = 2;
  c.max_batch_size = 4;
  c.max_queue_delay_us = 250;
  snprintf(c.policy, sizeof c.policy, "limit");
  snprintf(c.rate_basis, sizeof c.rate_basis, "admitted");
  c.deadline_ms = 12.5;
  c.max_deadline_ms = 3000;
  c.inflight_limit = 33;
  c.scale_half_life_s = 7;
  c.service_alpha = 0.1;
  c.service_tau_s = 0.25;
  c.wait_quantile = 0.95;
  c.overrun_quantile = 0.999;
  c.overrun_window_s = 1.5;
  c.adaptive_fill = 0.8;
  c.window_s = 0.2;
  c.retry_horizon_ms = 40;
  clear_other_sections(&c);
  at_server_config back = round_trip(&c, 0);
  assert_memory_equal(&back, &c, sizeof c);
  /* the batch size can be replaced (profile writes the one it chose) */
  back = round_trip(&c, 8);
  assert_int_equal(back.max_batch_size, 8);
  /* zero where zero is a value: overrun feedback off, no return slots */
  c.overrun_quantile = 0;
  c.retry_horizon_ms = 0;
  c.wait_quantile = 0;
  back = round_trip(&c, 0);
  assert_memory_equal(&back, &c, sizeof c);
}

static void test_defaults_stay_defaults(void **state) {
  (void)state;
  at_server_config c = at_server_config_default();
  clear_other_sections(&c);
  at_server_config back = round_trip(&c, 0);
  assert_memory_equal(&back, &c, sizeof c);
  char *yaml = at_server_config_settings_yaml(&c, 0);
  assert_non_null(yaml);
  /* left to the planner: not written, so a later default change applies */
  assert_null(strstr(yaml, "wait_quantile"));
  assert_null(strstr(yaml, "retry_horizon_ms"));
  assert_non_null(strstr(yaml, "hold_early_retries: true"));
  free(yaml);
}

/* A key written twice is refused, naming it and both lines, at any depth. */
static void test_duplicate_keys(void **state) {
  (void)state;
  const char *cases[] = {
      "server:\n  port: 8001\n  port: 8002\n",
      "server:\n  port: 8001\nserver:\n  host: 0.0.0.0\n",
      "generator:\n  model: m\n  admission: queue\n  admission: slo\n",
  };
  const char *keys[] = {"'port'", "'server'", "'admission'"};
  for (int i = 0; i < 3; i++) {
    at_server_config c = at_server_config_default();
    assert_int_equal(at_server_config_parse(cases[i], strlen(cases[i]), NULL, &c), AT_ERR_PARSE);
    assert_non_null(strstr(at_last_error(), keys[i]));
    assert_non_null(strstr(at_last_error(), "appears twice"));
  }
  /* the same key in two different mappings is fine */
  const char *ok = "server:\n  port: 8001\ngenerator:\n  model: m\n  max_tokens: 90\n"
                   "engine:\n  workers: 2\n";
  at_server_config c = at_server_config_default();
  if (at_server_config_parse(ok, strlen(ok), NULL, &c) != AT_OK) fail_msg("%s", at_last_error());
}

/* The generator section writer and parser agree, admission included. */
static void test_generator_round_trip(void **state) {
  (void)state;
  at_server_config c = at_server_config_default();
  c.generator.enabled = true;
  snprintf(c.generator.model, sizeof c.generator.model, "some/model");
  snprintf(c.generator.admission, sizeof c.generator.admission, "queue");
  c.generator.ttft_slo_ms = 750;
  char *buf = at_server_config_generator_yaml(&c);
  assert_non_null(buf);
  at_server_config back = at_server_config_default();
  assert_int_equal(at_server_config_parse(buf, strlen(buf), NULL, &back), AT_OK);
  free(buf);
  assert_string_equal(back.generator.admission, "queue");
  assert_true(back.generator.ttft_slo_ms == 750);
  const char *bad = "generator:\n  model: m\n  admission: sometimes\n";
  assert_int_equal(at_server_config_parse(bad, strlen(bad), NULL, &back), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "slo or queue"));
}

/* Every row of the key table (src/serve/config_keys.c), set away from its
 * default (to the top of its range, another choice, a path that needs
 * quoting), is written and parsed back to the same value, the generator's
 * section included: a key added to the table is covered here without a
 * line of this test changing. */
static void test_every_table_key_round_trips(void **state) {
  (void)state;
  size_t n;
  const cfg_key *k = serve_cfg_keys(&n);
  for (size_t i = 0; i < n; i++) {
    static at_server_config c, back; /* 392 KB each: off the stack */
    c = at_server_config_default();
    c.generator.enabled = true;
    snprintf(c.generator.model, sizeof c.generator.model, "org/model");
    /* one model with one variant, every required key set */
    at_server_model_config *m = &c.models[0];
    c.n_models = 1;
    snprintf(m->name, sizeof m->name, "m");
    snprintf(m->task, sizeof m->task, "classify");
    snprintf(m->tokenizer, sizeof m->tokenizer, "/t/tokenizer.json");
    m->n_variants = 1;
    snprintf(m->variants[0].name, sizeof m->variants[0].name, "v");
    snprintf(m->variants[0].path, sizeof m->variants[0].path, "/v.onnx");
    void *base = !strcmp(k[i].section, "models")     ? (void *)m
                 : !strcmp(k[i].section, "variants") ? (void *)&m->variants[0]
                                                     : (void *)&c;
    void *f = serve_cfg_field(base, &k[i]);
    int *tb = (int *)((char *)base + k[i].off_b);
    double *ts = (double *)((char *)base + k[i].off_s);
    char text[1100];
    switch (k[i].type) {
    case CFG_INT: *(int *)f = (int)k[i].hi; break;
    case CFG_SIZE: *(size_t *)f = (size_t)k[i].hi; break;
    case CFG_DOUBLE: *(double *)f = k[i].lo + (k[i].hi - k[i].lo) / 3; break;
    case CFG_BOOL: *(bool *)f = !(k[i].def != 0); break;
    case CFG_CHOICE: { /* the last choice, or the first if that is the default */
      const char *last = strrchr(k[i].choices, '|') + 1;
      size_t len = strcmp(last, k[i].sdef) ? strlen(last) : strcspn(k[i].choices, "|");
      snprintf(f, k[i].size, "%.*s", (int)len, strcmp(last, k[i].sdef) ? last : k[i].choices);
      break;
    }
    case CFG_PATH: /* absolute (a relative one is resolved), long, needing quotes */
      memset(text, 'p', 1000);
      memcpy(text, "/a dir: \"quoted\" #x/", 20);
      text[1000] = '\0';
      snprintf(f, k[i].size, "%s", text);
      break;
    case CFG_STRING:
    case CFG_MODEL: snprintf(f, k[i].size, "v: #1"); break;
    case CFG_SERVICE: /* the largest table; seconds a binary fraction, exact in ms */
      *(int *)f = AT_SERVER_MAX_POINTS;
      for (int p = 0; p < AT_SERVER_MAX_POINTS; p++)
        tb[p] = 1 + 3 * p, ts[p] = (1 + p) / 512.0;
      break;
    }
    /* the rules between keys hold: max_deadline_ms >= deadline_ms,
     * max_tokens >= default_max_tokens */
    if (!strcmp(k[i].key, "deadline_ms")) c.max_deadline_ms = c.deadline_ms;
    if (!strcmp(k[i].key, "default_max_tokens")) c.generator.max_tokens = c.generator.default_max_tokens;
    if (k[i].type == CFG_MODEL) snprintf(c.generator.model_raw, sizeof c.generator.model_raw, "v: #1");
    char *a = at_server_config_settings_yaml(&c, 0), *g = at_server_config_generator_yaml(&c),
         *ms = at_server_config_models_yaml(&c, NULL, NULL);
    assert_non_null(a);
    assert_non_null(g);
    assert_non_null(ms);
    size_t la = strlen(a), lg = strlen(g), lm = strlen(ms);
    char *doc = malloc(la + lg + lm + 1);
    assert_non_null(doc);
    memcpy(doc, a, la);
    memcpy(doc + la, g, lg);
    memcpy(doc + la + lg, ms, lm + 1);
    back = at_server_config_default();
    if (at_server_config_parse(doc, la + lg + lm, NULL, &back) != AT_OK)
      fail_msg("%s.%s: %s\n%s", k[i].section, k[i].key, at_last_error(), doc);
    assert_int_equal(back.n_models, 1);
    assert_int_equal(back.models[0].n_variants, 1);
    const void *bbase = base == (void *)m                  ? (void *)&back.models[0]
                        : base == (void *)&m->variants[0] ? (void *)&back.models[0].variants[0]
                                                          : (void *)&back;
    bool is_text = k[i].type == CFG_STRING || k[i].type == CFG_PATH ||
                   k[i].type == CFG_CHOICE || k[i].type == CFG_MODEL;
    const void *got = serve_cfg_value(bbase, &k[i]);
    if (is_text ? strcmp(got, f) != 0 : memcmp(got, f, k[i].size) != 0)
      fail_msg("%s.%s did not survive writing and parsing:\n%s", k[i].section, k[i].key, doc);
    if (k[i].type == CFG_SERVICE &&
        (memcmp((const char *)bbase + k[i].off_b, tb, AT_SERVER_MAX_POINTS * sizeof *tb) ||
         memcmp((const char *)bbase + k[i].off_s, ts, AT_SERVER_MAX_POINTS * sizeof *ts)))
      fail_msg("%s.%s: the table did not survive writing and parsing:\n%s", k[i].section,
               k[i].key, doc);
    free(a);
    free(g);
    free(ms);
    free(doc);
  }
}

/* docs/configuration.md names every key of the table in its section of the
 * annotated example, and every key it names there is one. */
static void test_docs_name_every_key(void **state) {
  (void)state;
  const char *path = test_source("docs/configuration.md");
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s", path);
  char line[1024], section[64] = "";
  bool in_yaml = false;
  size_t n;
  const cfg_key *k = serve_cfg_keys(&n);
  bool *seen = calloc(n, sizeof *seen);
  assert_non_null(seen);
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "```", 3)) {
      in_yaml = !in_yaml && !strncmp(line, "```yaml", 7);
      section[0] = '\0';
      continue;
    }
    if (!in_yaml) continue;
    char key[128];
    if (line[0] != ' ' && line[0] != '#' && sscanf(line, "%63[a-z_]:", section) == 1) continue;
    /* a key's depth: its indentation, a list item's "- " counted as such */
    size_t ind = strspn(line, " ");
    if (line[ind] == '-' && line[ind + 1] == ' ') ind += 2 + strspn(line + ind + 2, " ");
    if (sscanf(line + ind, "%127[a-z_]:", key) != 1) continue;
    const char *sec = section;
    if (!strcmp(section, "models")) { /* an entry's keys at 4, its variants' at 8 */
      if (ind == 4 && !strcmp(key, "variants")) continue;
      if (ind != 4 && ind != 8) continue;
      sec = ind == 4 ? "models" : "variants";
    } else if (ind != 2 || (strcmp(section, "server") && strcmp(section, "engine") &&
                            strcmp(section, "batching") && strcmp(section, "planner") &&
                            strcmp(section, "generator"))) {
      continue;
    }
    const cfg_key *hit = serve_cfg_key(sec, key);
    if (!hit) fail_msg("docs/configuration.md names %s.%s, which the parser does not know", sec, key);
    seen[hit - k] = true;
  }
  fclose(f);
  for (size_t i = 0; i < n; i++)
    if (!seen[i]) fail_msg("docs/configuration.md does not name %s.%s", k[i].section, k[i].key);
  free(seen);
}

/* at_server_config_set: every settings key of the table through the one
 * setter (its default value written back as text, so it must be taken),
 * then the parser's own refusals, word for word; at_server_config_check
 * catches what code put straight into the struct. */
static void test_set_and_check(void **state) {
  (void)state;
  at_server_config c = at_server_config_default();
  size_t n;
  const cfg_key *k = serve_cfg_keys(&n);
  int tried = 0;
  for (size_t i = 0; i < n; i++, k++) {
    if (!strcmp(k->section, "models") || !strcmp(k->section, "variants") || k->type == CFG_MODEL ||
        !strcmp(k->section, "generator"))
      continue; /* generator keys need generator.model: below */
    char a[256];
    switch (k->type) {
    case CFG_INT: case CFG_SIZE: case CFG_DOUBLE:
      snprintf(a, sizeof a, "%s.%s=%.17g", k->section, k->key, k->flags & CFG_UNSET_NEG ? k->lo : k->def);
      break;
    case CFG_BOOL: snprintf(a, sizeof a, "%s.%s=%s", k->section, k->key, k->def ? "true" : "false"); break;
    case CFG_CHOICE: snprintf(a, sizeof a, "%s.%s=%s", k->section, k->key, k->sdef); break;
    default: snprintf(a, sizeof a, "%s.%s=x", k->section, k->key); break;
    }
    if (at_server_config_set(&c, a) != AT_OK) fail_msg("%s: %s", a, at_last_error());
    tried++;
  }
  assert_true(tried > 30);
  assert_int_equal(at_server_config_set(&c, "planner.deadline_ms=25"), AT_OK);
  assert_true(c.deadline_ms == 25);
  assert_int_equal(at_server_config_set(&c, "server.host=0.0.0.0"), AT_OK);
  assert_string_equal(c.host, "0.0.0.0");
  /* a value with quotes and a backslash is taken as text */
  assert_int_equal(at_server_config_set(&c, "server.client_id_header=a\"b\\c"), AT_OK);
  assert_string_equal(c.client_id_header, "a\"b\\c");
  /* the parser's messages */
  assert_int_equal(at_server_config_set(&c, "planner.deadline_ms=0"), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "'deadline_ms' = 0 is out of range [0.01, 3.6e+06]"));
  assert_int_equal(at_server_config_set(&c, "server.port=80.5"), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "'port' must be a whole number"));
  assert_int_equal(at_server_config_set(&c, "planner.policy=greedy"), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "'policy' must be adaptive, accurate-only, none or limit"));
  assert_int_equal(at_server_config_set(&c, "planner.max_deadline_ms=10"), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "max_deadline_ms (10) is below deadline_ms (25)"));
  assert_int_equal(at_server_config_set(&c, "planner.nope=1"), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "'planner.nope' is not a setting"));
  assert_int_equal(at_server_config_set(&c, "models.name=x"), AT_ERR_INVALID_ARG);
  assert_int_equal(at_server_config_set(&c, "port=1"), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "SECTION.KEY=VALUE"));
  assert_int_equal(at_server_config_set(&c, "server.host=a\nb"), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "control character"));
  assert_int_equal(at_server_config_set(&c, "generator.chunk_tokens=8"), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "'generator' needs 'model'"));
  /* a refused setting leaves the value as it was */
  assert_true(c.deadline_ms == 25);
  assert_string_equal(c.policy, "adaptive");
  /* one check whatever filled the struct */
  at_server_config d = at_server_config_default();
  assert_int_equal(at_server_config_check(&d), AT_OK);
  d.deadline_ms = 0;
  assert_int_equal(at_server_config_check(&d), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "planner.deadline_ms = 0 is out of range"));
  d = at_server_config_default();
  d.workers = 5000;
  assert_int_equal(at_server_config_check(&d), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "engine.workers = 5000 is out of range [1, 1024]"));
  d = at_server_config_default();
  snprintf(d.policy, sizeof d.policy, "fast");
  assert_int_equal(at_server_config_check(&d), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "planner.policy = 'fast' must be adaptive"));
  d = at_server_config_default();
  d.wait_quantile = -1; /* a tuning key's "unset" passes */
  d.adaptive_fill = 0;
  assert_int_equal(at_server_config_check(&d), AT_OK);
  d.adaptive_fill = 0.05;
  assert_int_equal(at_server_config_check(&d), AT_ERR_INVALID_ARG);
  d = at_server_config_default();
  d.n_models = 1;
  d.models[0].n_variants = 1;
  snprintf(d.models[0].variants[0].name, sizeof d.models[0].variants[0].name, "v");
  d.models[0].variants[0].accuracy = 1.5;
  assert_int_equal(at_server_config_check(&d), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "v.accuracy = 1.5 is out of range [0, 1]"));
  /* the server refuses such a struct before it loads anything */
  at_server *srv = NULL;
  assert_int_equal(at_server_start(&d, &srv), AT_ERR_INVALID_ARG);
  assert_null(srv);
}

/* Whole-number keys refuse fractions; choices name what they accept. */
static void test_key_checks(void **state) {
  (void)state;
  at_server_config c = at_server_config_default();
  const char *frac = "server:\n  port: 80.5\n";
  assert_int_equal(at_server_config_parse(frac, strlen(frac), NULL, &c), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "'port' must be a whole number"));
  const char *pol = "planner:\n  policy: greedy\n";
  assert_int_equal(at_server_config_parse(pol, strlen(pol), NULL, &c), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "'policy' must be adaptive, accurate-only, none or limit"));
  const char *range = "engine:\n  workers: 0\n";
  assert_int_equal(at_server_config_parse(range, strlen(range), NULL, &c), AT_ERR_INVALID_ARG);
  assert_non_null(strstr(at_last_error(), "out of range [1, 1024]"));
  /* bucketing: 0 is off, a padding factor below 1 cannot hold */
  const char *pad = "models:\n  - name: m\n    task: classify\n    tokenizer: /t.json\n"
                    "    max_pad_factor: 0.5\n    variants:\n      - name: v\n        path: /v.onnx\n";
  c = at_server_config_default();
  assert_int_equal(at_server_config_parse(pad, strlen(pad), NULL, &c), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "'max_pad_factor' is 0 (bucketing off) or at least 1"));
}

/* The length model's two keys of a variant: accepted within their ranges
 * (0, 0 is off and is not written back), refused naming the key outside
 * them, and refused as a pair when len_cost_per_token x len_ref_tokens > 1
 * (an empty text would weigh less than nothing). A pair written and parsed
 * again is the same pair. */
static const char *len_doc(char *buf, size_t cap, const char *keys) {
  snprintf(buf, cap,
           "models:\n  - name: m\n    task: classify\n    tokenizer: /t.json\n"
           "    variants:\n      - name: v\n        path: /v.onnx\n%s",
           keys);
  return buf;
}

static void test_length_model_keys(void **state) {
  (void)state;
  static at_server_config c, back;
  char doc[512];
  struct {
    const char *keys;
    double ref, cost;
  } ok[] = {
      {"", 0, 0},
      {"        len_ref_tokens: 27.43\n        len_cost_per_token: 0.0213\n", 27.43, 0.0213},
      {"        len_ref_tokens: 100000\n        len_cost_per_token: 0.00001\n", 100000, 0.00001},
      {"        len_ref_tokens: 1\n        len_cost_per_token: 1\n", 1, 1}, /* w(0) = 0 */
      {"        len_ref_tokens: 0\n        len_cost_per_token: 1\n", 0, 1},
      {"        len_ref_tokens: 40\n", 40, 0},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    c = at_server_config_default();
    len_doc(doc, sizeof doc, ok[i].keys);
    if (at_server_config_parse(doc, strlen(doc), NULL, &c) != AT_OK)
      fail_msg("refused:\n%s\n%s", doc, at_last_error());
    assert_true(c.models[0].variants[0].len_ref_tokens == ok[i].ref);
    assert_true(c.models[0].variants[0].len_cost_per_token == ok[i].cost);
    /* written and parsed again: the same pair; off is not written */
    char *y = at_server_config_models_yaml(&c, NULL, NULL);
    assert_non_null(y);
    if (ok[i].ref == 0 && ok[i].cost == 0) assert_null(strstr(y, "len_"));
    back = at_server_config_default();
    if (at_server_config_parse(y, strlen(y), NULL, &back) != AT_OK) fail_msg("%s\n%s", at_last_error(), y);
    assert_true(back.models[0].variants[0].len_ref_tokens == ok[i].ref);
    assert_true(back.models[0].variants[0].len_cost_per_token == ok[i].cost);
    free(y);
  }
  struct {
    const char *keys, *detail;
    at_status st;
  } bad[] = {
      {"        len_ref_tokens: -1\n", "'len_ref_tokens' = -1 is out of range [0, 100000]",
       AT_ERR_INVALID_ARG},
      {"        len_ref_tokens: 100001\n", "'len_ref_tokens' = 100001 is out of range",
       AT_ERR_INVALID_ARG},
      {"        len_cost_per_token: 1.5\n", "'len_cost_per_token' = 1.5 is out of range [0, 1]",
       AT_ERR_INVALID_ARG},
      {"        len_cost_per_token: -0.01\n", "'len_cost_per_token' = -0.01 is out of range",
       AT_ERR_INVALID_ARG},
      {"        len_cost_per_token: many\n", "'len_cost_per_token' must be a number", AT_ERR_PARSE},
      {"        len_ref_tokens: 30\n        len_cost_per_token: 0.05\n",
       "'len_cost_per_token' x 'len_ref_tokens' = 0.05 x 30 is more than 1", AT_ERR_PARSE},
      {"        len_cost_per_token: 1\n        len_ref_tokens: 1.0001\n",
       "is more than 1", AT_ERR_PARSE},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    c = at_server_config_default();
    len_doc(doc, sizeof doc, bad[i].keys);
    at_status st = at_server_config_parse(doc, strlen(doc), NULL, &c);
    if (st != bad[i].st || !strstr(at_last_error(), bad[i].detail))
      fail_msg("%s: got %s '%s', wanted %s '%s'", bad[i].keys, at_status_name(st), at_last_error(),
               at_status_name(bad[i].st), bad[i].detail);
  }
}

/* profile's form of the models list: a variant off the frontier is
 * written commented out, and deleting the '#' of its lines offers it. */
static void test_models_offered(void **state) {
  (void)state;
  static at_server_config c, back;
  c = at_server_config_default();
  c.n_models = 1;
  at_server_model_config *m = &c.models[0];
  snprintf(m->name, sizeof m->name, "m");
  snprintf(m->task, sizeof m->task, "embed");
  snprintf(m->tokenizer, sizeof m->tokenizer, "/d/tok.json");
  m->n_variants = 3;
  for (int v = 0; v < 3; v++) {
    snprintf(m->variants[v].name, sizeof m->variants[v].name, "v%d", v);
    snprintf(m->variants[v].path, sizeof m->variants[v].path, "/d/sub/v%d.onnx", v);
    m->variants[v].accuracy = 0.9 - 0.1 * v;
  }
  bool offered[AT_SERVER_MAX_MODELS * AT_SERVER_MAX_VARIANTS] = {true, false, true};
  char *y = at_server_config_models_yaml(&c, "/d", offered);
  assert_non_null(y);
  /* paths under the directory are relative to it */
  assert_non_null(strstr(y, "tokenizer: tok.json\n"));
  assert_non_null(strstr(y, "path: sub/v0.onnx\n"));
  back = at_server_config_default();
  if (at_server_config_parse(y, strlen(y), "/d", &back) != AT_OK) fail_msg("%s\n%s", at_last_error(), y);
  assert_int_equal(back.models[0].n_variants, 2);
  assert_string_equal(back.models[0].variants[1].name, "v2");
  assert_string_equal(back.models[0].variants[1].path, "/d/sub/v2.onnx");
  assert_non_null(strstr(y, "# dominated"));
  /* offer it: drop the '#' at the start of every line */
  char *un = malloc(strlen(y) + 1);
  assert_non_null(un);
  size_t o = 0;
  for (const char *p = y; *p; p++)
    if (!(*p == '#' && (p == y || p[-1] == '\n'))) un[o++] = *p;
  un[o] = '\0';
  back = at_server_config_default();
  if (at_server_config_parse(un, o, "/d", &back) != AT_OK) fail_msg("%s\n%s", at_last_error(), un);
  assert_int_equal(back.models[0].n_variants, 3);
  assert_string_equal(back.models[0].variants[2].name, "v1");
  assert_true(back.models[0].variants[2].accuracy == 0.8);
  free(un);
  free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_setting_round_trips),
      cmocka_unit_test(test_defaults_stay_defaults),
      cmocka_unit_test(test_duplicate_keys),
      cmocka_unit_test(test_generator_round_trip),
      cmocka_unit_test(test_every_table_key_round_trips),
      cmocka_unit_test(test_docs_name_every_key),
      cmocka_unit_test(test_models_offered),
      cmocka_unit_test(test_key_checks),
      cmocka_unit_test(test_set_and_check),
      cmocka_unit_test(test_length_model_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
