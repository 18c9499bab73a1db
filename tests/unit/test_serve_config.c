/* tests/unit/test_serve_config.c — the configuration's one settings writer
 * (at_server_config_settings_yaml) against its parser: every server,
 * engine, batching and planner setting, set away from its default, is
 * written and parsed back to the same value; settings left to the
 * planner's defaults stay unset; and what the writer emits is a document
 * the parser accepts with no unknown key. `anytime sweep` and `anytime
 * profile` rewrite configurations through this writer: before it, the
 * sweep's cheap-only configuration silently dropped wait_quantile,
 * rate_basis and every other planner key it did not list. */
#include <stdlib.h>
#include <string.h>

#include "anytime/server.h"
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
  char buf[4096];
  assert_true(at_server_config_generator_yaml(&c, buf, sizeof buf) > 0);
  at_server_config back = at_server_config_default();
  assert_int_equal(at_server_config_parse(buf, strlen(buf), NULL, &back), AT_OK);
  assert_string_equal(back.generator.admission, "queue");
  assert_true(back.generator.ttft_slo_ms == 750);
  const char *bad = "generator:\n  model: m\n  admission: sometimes\n";
  assert_int_equal(at_server_config_parse(bad, strlen(bad), NULL, &back), AT_ERR_PARSE);
  assert_non_null(strstr(at_last_error(), "slo or queue"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_setting_round_trips),
      cmocka_unit_test(test_defaults_stay_defaults),
      cmocka_unit_test(test_duplicate_keys),
      cmocka_unit_test(test_generator_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
