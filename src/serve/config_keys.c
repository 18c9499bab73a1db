/* src/serve/config_keys.c — the table of every server setting (see
 * config_keys.h): one row per key with its type, range and default. To add
 * a setting: a field in at_server_config (include/anytime/server.h), a row
 * here, a line in docs/configuration.md (test_serve_config fails without
 * it). */
#include <stddef.h>
#include <string.h>

#include "serve/config_keys.h"

#define AT(field) offsetof(at_server_config, field), sizeof(((at_server_config *)0)->field)
#define M(field) offsetof(at_server_model_config, field), sizeof(((at_server_model_config *)0)->field)
#define V(field) \
  offsetof(at_server_variant_config, field), sizeof(((at_server_variant_config *)0)->field)
#define INT(sec, key, field, lo, hi, def) {sec, key, CFG_INT, AT(field), lo, hi, def, NULL, NULL, 0, 0, 0}
#define SIZE(sec, key, field, lo, hi, def) {sec, key, CFG_SIZE, AT(field), lo, hi, def, NULL, NULL, 0, 0, 0}
#define DBL(sec, key, field, lo, hi, def) {sec, key, CFG_DOUBLE, AT(field), lo, hi, def, NULL, NULL, 0, 0, 0}
/* a planner tuning key: -1 leaves the planner's own default */
#define TUNE(key, field, lo, hi, fl) \
  {"planner", key, CFG_DOUBLE, AT(field), lo, hi, -1, NULL, NULL, CFG_UNSET_NEG | (fl), 0, 0}
#define BOOL(sec, key, field, def) {sec, key, CFG_BOOL, AT(field), 0, 1, def, NULL, NULL, 0, 0, 0}
#define STR(sec, key, field, def, fl) {sec, key, CFG_STRING, AT(field), 0, 0, 0, def, NULL, fl, 0, 0}
#define PATH(sec, key, field) {sec, key, CFG_PATH, AT(field), 0, 0, 0, "", NULL, CFG_IF_SET, 0, 0}
#define CHOICE(sec, key, field, def, choices) \
  {sec, key, CFG_CHOICE, AT(field), 0, 0, 0, def, choices, 0, 0, 0}

static const cfg_key keys[] = {
    STR("server", "host", host, "127.0.0.1", 0),
    INT("server", "port", port, 0, 65535, 8000),
    INT("server", "grpc_port", grpc_port, 0, 65535, 0),
    INT("server", "http_threads", http_threads, 1, 256, 2),
    BOOL("server", "http_batch_sched", http_batch_sched, 1),
    SIZE("server", "max_body_bytes", max_body_bytes, 1024, 1 << 30, 1 << 20),
    SIZE("server", "max_inputs", max_inputs, 1, 100000, 64),
    SIZE("server", "max_tokens", max_tokens, 3, 65536, 512),
    SIZE("server", "max_queued", max_queued, 1, 1 << 24, 4096),
    BOOL("server", "hold_early_retries", hold_early_retries, 1),
    STR("server", "client_id_header", client_id_header, "x-client-id", 0),
    BOOL("server", "trust_forwarded", trust_forwarded, 0),
    BOOL("server", "auto_truncate", auto_truncate, 0),
    INT("server", "idle_timeout_s", idle_timeout_s, 1, 86400, 60),
    INT("server", "max_connections", max_connections, 16, 1000000, 4096),
    INT("server", "max_connections_per_client", max_connections_per_client, 0, 1000000, 0),
    INT("server", "max_header_bytes", max_header_bytes, 4096, 1 << 24, 32768),
    PATH("server", "api_key_file", api_key_file),
    BOOL("server", "metrics_need_key", metrics_need_key, 0),
    PATH("server", "tls_cert", tls_cert),
    PATH("server", "tls_key", tls_key),
    PATH("server", "access_log", access_log),
    INT("engine", "workers", workers, 1, 1024, 2),
    INT("engine", "intra_op_threads", intra_op_threads, 1, 1024, 1),
    INT("engine", "idle_intra_op_threads", idle_intra_op_threads, 0, 1024, 0),
    BOOL("engine", "cpu_arena", cpu_arena, 0),
    INT("batching", "max_batch_size", max_batch_size, 1, 1024, 16),
    INT("batching", "max_queue_delay_us", max_queue_delay_us, 0, 10000000, 0),
    CHOICE("planner", "policy", policy, "adaptive", "adaptive|accurate-only|none|limit"),
    CHOICE("planner", "rate_basis", rate_basis, "offered", "offered|admitted"),
    DBL("planner", "deadline_ms", deadline_ms, 0.01, 3600000, 50),
    DBL("planner", "max_deadline_ms", max_deadline_ms, 0.01, 3600000, 10000),
    INT("planner", "inflight_limit", inflight_limit, 1, 1000000, 512),
    TUNE("scale_half_life_s", scale_half_life_s, 0, 3600, 0),
    TUNE("service_alpha", service_alpha, 0, 1, 0),
    TUNE("service_tau_s", service_tau_s, 0, 3600, 0),
    TUNE("wait_quantile", wait_quantile, 0, 0.999999, 0),
    TUNE("overrun_quantile", overrun_quantile, 0, 0.999999, 0), /* 0 turns the feedback off */
    TUNE("overrun_window_s", overrun_window_s, 0.01, 60, CFG_UNSET_ZERO),
    TUNE("adaptive_fill", adaptive_fill, 0.1, 1, CFG_UNSET_ZERO),
    TUNE("window_s", window_s, 0.01, 60, CFG_UNSET_ZERO),
    TUNE("retry_horizon_ms", retry_horizon_ms, 0, 60000, 0),
    TUNE("priority_fill", priority_fill, 0.01, 1, CFG_UNSET_ZERO),
    TUNE("fair_fill", fair_fill, 0, 1, 0),
    TUNE("queue_horizon_ms", queue_horizon_ms, 0, 3600000, CFG_UNSET_ZERO),
    STR("generator", "name", generator.name, "decoder", 0),
    {"generator", "model", CFG_MODEL, AT(generator.model), 0, 0, 0, "", NULL, 0, 0, 0},
    STR("generator", "variant", generator.variant, "", CFG_IF_SET),
    STR("generator", "fallback_variant", generator.fallback_variant, "", CFG_IF_SET),
    INT("generator", "threads", generator.threads, 1, 256, 1),
    INT("generator", "block_tokens", generator.block_tokens, 1, 4096, 16),
    INT("generator", "blocks", generator.blocks, 1, 1 << 20, 512),
    DBL("generator", "safety", generator.safety, 0.01, 100, 1.0),
    INT("generator", "chunk_tokens", generator.chunk_tokens, 1, 65536, 64),
    INT("generator", "max_batch", generator.max_batch, 1, 256, 8),
    BOOL("generator", "bucketing", generator.bucketing, 0),
    BOOL("generator", "preempt", generator.preempt, 1),
    BOOL("generator", "prefix_cache", generator.prefix_cache, 1),
    INT("generator", "max_waiting", generator.max_waiting, 1, 1 << 20, 256),
    DBL("generator", "ttft_slo_ms", generator.ttft_slo_ms, 0.001, 3600000, 2000),
    DBL("generator", "tpot_slo_ms", generator.tpot_slo_ms, 0.001, 3600000, 200),
    CHOICE("generator", "admission", generator.admission, "slo", "slo|queue"),
    DBL("generator", "admit_fill", generator.admit_fill, 0.05, 1, 0.8),
    INT("generator", "default_max_tokens", generator.default_max_tokens, 1, 1 << 20, 16),
    INT("generator", "max_tokens", generator.max_tokens, 1, 1 << 20, 256),
    /* one entry of `models:` (its `variants:` list is read by config.c) */
    {"models", "name", CFG_STRING, M(name), 0, 0, 0, "", NULL, CFG_REQUIRED, 0, 0},
    {"models", "task", CFG_CHOICE, M(task), 0, 0, 0, "", "classify|embed", CFG_REQUIRED, 0, 0},
    {"models", "tokenizer", CFG_PATH, M(tokenizer), 0, 0, 0, "", NULL, CFG_REQUIRED, 0, 0},
    {"models", "config", CFG_PATH, M(config_json), 0, 0, 0, "", NULL, CFG_IF_SET, 0, 0},
    {"models", "shared_space", CFG_BOOL, M(shared_space), 0, 1, 0, NULL, NULL, CFG_IF_SET, 0, 0},
    /* length-bucketed batching of the model's variants (at_bucketing) */
    {"models", "max_pad_factor", CFG_DOUBLE, M(max_pad_factor), 0, 64, 0, NULL, NULL, CFG_IF_SET, 0, 0},
    {"models", "bucket_max_wait_us", CFG_INT, M(bucket_max_wait_us), 0, 10000000, 100000, NULL, NULL,
     CFG_IF_SET, 0, 0},
    /* one entry of a model's `variants:` */
    {"variants", "name", CFG_STRING, V(name), 0, 0, 0, "", NULL, CFG_REQUIRED, 0, 0},
    {"variants", "path", CFG_PATH, V(path), 0, 0, 0, "", NULL, CFG_REQUIRED, 0, 0},
    {"variants", "accuracy", CFG_DOUBLE, V(accuracy), 0, 1, 0, NULL, NULL, 0, 0, 0},
    {"variants", "cost", CFG_DOUBLE, V(cost), 0, 1e9, 0, NULL, NULL, 0, 0, 0},
    {"variants", "service_ms", CFG_SERVICE, V(n_points), 0, 0, 0, NULL, NULL, CFG_IF_SET,
     offsetof(at_server_variant_config, batch), offsetof(at_server_variant_config, service_s)},
    {"variants", "service_busy_ms", CFG_SERVICE, V(n_busy_points), 0, 0, 0, NULL, NULL, CFG_IF_SET,
     offsetof(at_server_variant_config, busy_batch), offsetof(at_server_variant_config, busy_s)},
    /* the length model (at_plan_variant.len_ref_tokens / len_cost_per_token),
     * written by `anytime profile --length-buckets`; 0, 0: off. config.c
     * refuses a pair with len_cost_per_token x len_ref_tokens > 1. */
    {"variants", "len_ref_tokens", CFG_DOUBLE, V(len_ref_tokens), 0, 100000, 0, NULL, NULL,
     CFG_IF_SET, 0, 0},
    {"variants", "len_cost_per_token", CFG_DOUBLE, V(len_cost_per_token), 0, 1, 0, NULL, NULL,
     CFG_IF_SET, 0, 0},
};

const cfg_key *serve_cfg_keys(size_t *n) {
  *n = sizeof keys / sizeof keys[0];
  return keys;
}

const cfg_key *serve_cfg_key(const char *section, const char *key) {
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!strcmp(keys[i].section, section) && !strcmp(keys[i].key, key)) return &keys[i];
  return NULL;
}

void *serve_cfg_field(void *base, const cfg_key *k) { return (char *)base + k->off; }

const void *serve_cfg_value(const void *base, const cfg_key *k) {
  return (const char *)base + k->off;
}
