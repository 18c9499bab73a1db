/* anytime/server.h — the HTTP server: configuration and lifecycle.
 *
 * A server owns one engine (all variants of all served models share its
 * worker pool), one batcher in front of it, one planner per model, the
 * metrics, and a libmicrohttpd daemon. HTTP threads ask the planner first
 * (a request of N texts counts N; a refusal answers 429 with Retry-After
 * and retry-after-ms at once, before any tokenising and, for the text
 * routes, before the body is parsed), then parse, validate and tokenise,
 * and suspend the connection; engine workers compute, apply the task head
 * (softmax / mean pooling) and resume it. Routes and their shapes:
 * docs/api.md.
 *
 * Thread-safety: at_server_start() and at_server_stop() from one thread
 * (the program's main thread); everything else happens on the server's own
 * threads.
 */
#ifndef ANYTIME_SERVER_H
#define ANYTIME_SERVER_H

#include "anytime/api.h"

#include <stdbool.h>
#include <stddef.h>

#include "anytime/plan.h"
#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AT_SERVER_MAX_MODELS 8
#define AT_SERVER_MAX_VARIANTS 8
#define AT_SERVER_MAX_POINTS 16
#define AT_SERVER_MAX_API_KEYS 8

typedef struct at_server_variant_config {
  char name[64];
  char path[AT_PATH_CAP];       /* ONNX file */
  double accuracy;        /* held-out accuracy; orders variants (higher first) */
  double cost;            /* relative compute per request; <= 0: derived */
  int n_points;           /* service-time table: batch size -> seconds */
  int batch[AT_SERVER_MAX_POINTS];
  double service_s[AT_SERVER_MAX_POINTS];
  int n_busy_points;      /* the same with every worker running at once */
  int busy_batch[AT_SERVER_MAX_POINTS];
  double busy_s[AT_SERVER_MAX_POINTS];
  /* Length model (at_plan_variant.len_ref_tokens / len_cost_per_token):
   * a text of t tokens costs 1 + len_cost_per_token·(t − len_ref_tokens)
   * times the table; 0, 0 (default): every text costs the table. */
  double len_ref_tokens;
  double len_cost_per_token;
} at_server_variant_config;

typedef struct at_server_model_config {
  char name[64];
  char task[16];          /* "classify" | "embed" */
  char tokenizer[AT_PATH_CAP]; /* tokenizer.json, vocab.txt or a directory */
  char config_json[AT_PATH_CAP]; /* HF config.json (id2label, max_position_embeddings) */
  bool shared_space;      /* embed: variants of different models that share one vector
                             space; unchecked (else start-up checks they agree) */
  double max_pad_factor;  /* length bucketing of its batches: 0 (default) off, else
                             1..64 (at_bucketing.max_pad_factor) */
  int bucket_max_wait_us; /* with bucketing, a text passed over this long goes in the
                             next batch whatever its length (at_bucketing); 100000 */
  int n_variants;
  at_server_variant_config variants[AT_SERVER_MAX_VARIANTS];
} at_server_model_config;

/* The generation lane (POST /v1/completions); off unless configured. */
typedef struct at_server_generator_config {
  bool enabled;
  char name[64];          /* the "model" clients name; default "decoder" */
  char model[AT_PATH_CAP]; /* model directory, name under ./models or ORG/NAME[@rev] */
  char model_raw[AT_PATH_CAP]; /* `model` as written in the file */
  char variant[32];       /* "" = the family's first (most accurate) */
  /* "" (default): one lane. Otherwise a cheaper variant of the same model
   * (e.g. int8 beside fp32) in a second lane on the same cores: with
   * admission "slo" a request goes to `variant` when its forecast meets the
   * request's budgets, else to this one when its forecast does, else 429
   * (at_gen_choose_lane). */
  char fallback_variant[32];
  int threads;            /* ORT intra-op threads of the decoder: the lane's CPU budget; 1 */
  int block_tokens;       /* 16 */
  int blocks;             /* KV arena size; 512 */
  double safety;          /* admission safety factor; 1.0 */
  int chunk_tokens;       /* prefill chunk width; 64 */
  int max_batch;          /* sequences per decode step; 8 */
  bool bucketing;         /* false */
  bool preempt;           /* true */
  bool prefix_cache;      /* true: KV blocks shared across requests by token prefix */
  int max_waiting;        /* 256 */
  double ttft_slo_ms;     /* 2000 */
  double tpot_slo_ms;     /* 200 */
  /* "slo" (default): refuse at once (429 + Retry-After) a request whose
   * forecast time to first token or per output token (at_gen_forecast_for)
   * misses its budget: x-ttft-ms / x-tpot-ms, capped by ttft_slo_ms /
   * tpot_slo_ms. "queue": admit until max_waiting sequences wait. */
  char admission[16];
  double admit_fill;      /* slo: admit within this share of the budgets; 0.8 */
  int default_max_tokens; /* when a request omits max_tokens; 16 (as OpenAI) */
  int max_tokens;         /* cap per request; 256 */
} at_server_generator_config;

typedef struct at_server_config {
  char host[64];          /* default 127.0.0.1 */
  int port;               /* default 8000 */
  int grpc_port;          /* KServe V2 gRPC (server.grpc_port, --grpc-port); 0 (default): off */
  int http_threads;       /* default 2 */
  bool http_batch_sched;  /* the HTTP threads run under SCHED_BATCH, so that their
                             wake-ups do not preempt a worker's Run; default true
                             (docs/benchmarks.md, "What a served Run costs") */
  int workers;            /* engine workers; default 2 */
  int intra_op_threads;   /* per Run; default 1 */
  int idle_intra_op_threads; /* 0 (default) or >= 2: threads of a Run that finds the pool
                                idle (a second session per variant; anytime/engine.h) */
  bool cpu_arena;         /* ORT's CPU memory arena for the workers' shared sessions;
                             default false (at_session_params.cpu_mem_arena says why;
                             the generation lane's one-thread sessions keep it). A
                             program that embeds the server with it off should fix
                             glibc's malloc thresholds first, as anytime's main()
                             does (src/cli/main.c, tune_malloc) */
  size_t max_body_bytes;  /* default 1 MiB */
  size_t max_inputs;      /* texts per request; default 64 */
  size_t max_tokens;      /* tokens per input (after special tokens); default 512,
                             lowered to the model's max_position_embeddings */
  size_t max_queued;      /* items waiting in the batcher; default 4096 */
  int max_batch_size;     /* default 16 */
  int max_queue_delay_us; /* default 0 */
  char policy[32];        /* "adaptive" (default) | "accurate-only" | "none" (no admission
                             control) | "limit" (at most inflight_limit texts in flight) */
  char rate_basis[16];    /* "offered" (default) | "admitted": the rate Erlang C sees */
  double deadline_ms;     /* default 50 */
  double max_deadline_ms; /* cap on x-deadline-ms; default 10000 */
  double scale_half_life_s; /* planner: correction-factor half-life; < 0 = the planner's default */
  double service_alpha;     /* planner: EWMA weight of one observed Run; < 0 = the planner's default */
  double service_tau_s;     /* planner: time constant of that EWMA; < 0 = the planner's default */
  double wait_quantile;     /* planner: 0 = mean wait, (0,1) = that quantile; < 0 = default */
  int inflight_limit;       /* policy "limit": texts in flight at most, 1..1e6; default 512 */
  double overrun_quantile;  /* planner: quantile of the overrun feedback, 0 = off; < 0 = default */
  double overrun_window_s;  /* planner: window of the overrun's fast estimate, s; < 0 = default */
  double adaptive_fill;     /* planner: share of the budget all but the cheapest variant may
                               fill, 0.1..1; < 0 = default */
  double window_s;          /* planner: demand-rate window, s; < 0 = default */
  double priority_fill;     /* planner: the share of its budget a request may fill per
                               higher priority class with traffic (x-priority),
                               0.01..1; < 0 = default (0.5) */
  double retry_horizon_ms;  /* planner: how far ahead refused requests' return slots
                               may lie, ms, 0 = no slots; < 0 = default (250) */
  double fair_fill;         /* planner: the share of its budget a client in debt may fill
                               while the pool is contended, 0..1 (1 = no fair
                               sharing); < 0 = default (0.5) */
  double queue_horizon_ms;  /* planner: the most work a request with a longer deadline
                               may queue behind while shorter ones are asked, ms;
                               < 0 or 0 = default (the default deadline) */
  bool hold_early_retries;  /* a refusal of a client that came back before the
                               time its last 429 gave is answered at that time,
                               not at once; default true */
  char client_id_header[64]; /* the header naming a request's client (after its API
                               key; default x-client-id; "" = none) */
  bool trust_forwarded;     /* the proxy in front is ours: X-Forwarded-For's last
                               entry names the client; default false */
  int idle_timeout_s;       /* a connection idle (or sending too slowly) this long is
                               closed; default 60 */
  int max_connections;      /* open connections at most; past it new ones are closed
                               at once; default 4096 */
  int max_connections_per_client; /* per client address; 0 = no cap (default) */
  int max_header_bytes;     /* a connection's buffer for the request line, headers
                               and reads (431 when they do not fit); 32768 */
  bool auto_truncate;       /* a text over the model's token limit is cut to it
                               unless the request says "truncate": false;
                               default false (such a text gets 413) */
  char artifact_cache_dir[AT_PATH_CAP]; /* compiled-artifact cache ("" = off; anytime/model.h) */
  /* Who may call it: with any key set, every route but the health probes
   * (/health, /v2/health/live, /v2/health/ready) and /metrics (unless
   * metrics_need_key) needs
   * "Authorization: Bearer KEY" (else 401). Keys: api_keys[] (--api-key,
   * ANYTIME_API_KEY) and the lines of api_key_file (server.api_key_file). */
  int n_api_keys;
  char api_keys[AT_SERVER_MAX_API_KEYS][520];
  char api_key_file[AT_PATH_CAP];
  bool metrics_need_key;    /* GET /metrics needs the API key too (server.metrics_need_key);
                               default false: scrapers send none */
  /* HTTPS (server.tls_cert / tls_key, --tls-cert / --tls-key): PEM files;
   * both or neither. */
  char tls_cert[AT_PATH_CAP];
  char tls_key[AT_PATH_CAP];
  /* One JSON line per answered request (server.access_log, --access-log);
   * "" = off. Reopened by at_server_reopen_logs() (SIGHUP in `anytime
   * serve`). docs/deployment.md. */
  char access_log[AT_PATH_CAP];
  int n_models;
  at_server_model_config models[AT_SERVER_MAX_MODELS];
  at_server_generator_config generator;
} at_server_config;

typedef struct at_server at_server;

/* Defaults as documented on each field, with no models. */
AT_API at_server_config at_server_config_default(void);

/* The planner parameters a configuration asks for: the planner's defaults
 * (at_planner_default_params) with every planner.* key, engine.workers and
 * batching.max_batch_size the configuration sets. The one place the
 * server, `anytime simulate` and anything else that builds a planner from a
 * config map it. Returns AT_OK, AT_ERR_INVALID_ARG (NULL, unknown policy). */
AT_API at_status at_server_config_planner_params(const at_server_config *cfg, at_planner_params *out);

/* A configured variant as the planner sees it: name (borrowed from `vc`),
 * accuracy, cost, its service-time table and the busy factor (the pool's
 * slowdown at the smallest batch, service_busy_ms / service_ms). Returns
 * false, with *out's table empty, when the config has no table for it. */
AT_API bool at_server_variant_plan(const at_server_variant_config *vc, at_plan_variant *out);

/* The `generator:` section of `cfg` as YAML ("" when it is not enabled),
 * for tools that rewrite a configuration. Returns a malloc'ed string (the
 * caller frees it), or NULL without memory. */
AT_API char *at_server_config_generator_yaml(const at_server_config *cfg);

/* The server:, engine:, batching: and planner: sections of `cfg` as YAML,
 * every key the parser knows (the planner's tuning keys only where `cfg`
 * sets them), so that parsing the text back gives the same settings: the
 * one writer for tools that rewrite a configuration (profile, sweep).
 * `max_batch_size` > 0 replaces cfg's. Returns a malloc'ed string (the
 * caller frees it), or NULL without memory. */
AT_API char *at_server_config_settings_yaml(const at_server_config *cfg, int max_batch_size);

/* The `models:` section of `cfg` as YAML, every key the parser knows, so
 * that parsing it back gives the same models (service tables to the
 * nanosecond). With `rel_dir`, model and variant paths under that
 * directory are written relative to it (the file will be written there)
 * and other ones absolute. With `offered` (n_models x
 * AT_SERVER_MAX_VARIANTS flags, row-major), a variant whose flag is false
 * is written commented out below its model's list, for a reader to see and
 * to offer by deleting the '#'s. Returns a malloc'ed string (the caller
 * frees it), or NULL without memory. */
AT_API char *at_server_config_models_yaml(const at_server_config *cfg, const char *rel_dir,
                                          const bool *offered);

/* Read a YAML config (format: docs/configuration.md) over `cfg`'s current
 * values. Relative model paths are resolved against the YAML file's
 * directory. Returns AT_OK, AT_ERR_NOT_FOUND, AT_ERR_IO, AT_ERR_PARSE (the
 * detail names the line/key), AT_ERR_INVALID_ARG (a value out of range),
 * AT_ERR_LIMIT (too many models or variants). */
AT_API at_status at_server_config_load(const char *path, at_server_config *cfg);

/* The same for a YAML document in memory (`len` bytes, need not be
 * NUL-terminated); relative paths resolve against `base_dir` (NULL = ".").
 * Same statuses except AT_ERR_NOT_FOUND/AT_ERR_IO. */
AT_API at_status at_server_config_parse(const char *yaml, size_t len, const char *base_dir,
                                        at_server_config *cfg);

/* One setting, "SECTION.KEY=VALUE" (a key of docs/configuration.md's
 * server, engine, batching, planner or generator sections), over `cfg`'s
 * current values, with exactly the YAML parser's checks (type, range,
 * choices, the rules between keys); relative paths resolve against the
 * current directory. `anytime serve --set` and its flags use it. Returns
 * AT_OK, AT_ERR_INVALID_ARG (not a setting, a value out of range: the
 * detail names the key), AT_ERR_PARSE (a value of the wrong type). */
AT_API at_status at_server_config_set(at_server_config *cfg, const char *assignment);

/* Every setting of `cfg`, its models' and their variants' against the
 * table's ranges and choices and the rules between keys, whatever set
 * them (a file, --set, code that fills the struct): at_server_start runs
 * it first. Returns AT_OK or AT_ERR_INVALID_ARG naming the key. */
AT_API at_status at_server_config_check(const at_server_config *cfg);

/* Is `name` usable as a model, variant or generator name? 1..63 of
 * [A-Za-z0-9._:-], not starting with '.' or '-'. Names are echoed in
 * headers (x-model, x-variant), Prometheus labels, JSON and V2 URLs
 * (/v2/models/NAME/...), so quotes, spaces, slashes and control characters
 * are refused rather than escaped in four ways. Pure, any thread. */
AT_API bool at_server_name_valid(const char *name);

/* Find the built-in default configuration: configs/serving.yaml in the
 * current directory, else in anytime's source tree. Writes the path into
 * buf. Returns AT_OK or AT_ERR_NOT_FOUND (detail lists the places tried). */
AT_API at_status at_server_default_config_path(char *buf, size_t cap);

/* Load every model, start the engine, batcher and HTTP daemon. On success
 * *out is serving. Returns AT_OK, AT_ERR_INVALID_ARG (bad config: detail
 * says which field, e.g. a name at_server_name_valid() refuses), AT_ERR_IO (cannot bind host:port), or any error from
 * loading a model or tokenizer. */
AT_API at_status at_server_start(const at_server_config *cfg, at_server **out);

/* The port actually bound (useful with port 0). */
AT_API int at_server_port(const at_server *s);

/* Stop accepting, answer everything admitted, stop all threads and free.
 * NULL is a no-op. */
AT_API void at_server_stop(at_server *s);

/* Close and reopen the access log at its path (after logrotate moved it).
 * Any thread. Returns AT_OK (also when there is no log) or AT_ERR_IO (the
 * old file stays in use). */
AT_API at_status at_server_reopen_logs(at_server *s);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_SERVER_H */
