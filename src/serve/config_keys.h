/* src/serve/config_keys.h — the server configuration's one table of
 * settings: section, key, type, range, default and where the value lives in
 * at_server_config. The defaults (at_server_config_default), the YAML
 * parser (config.c), the writers (at_server_config_settings_yaml,
 * at_server_config_generator_yaml, at_server_config_models_yaml) and the
 * check that docs/configuration.md
 * names every key (test_serve_config) all read it, so a setting is added in
 * one place. Not part of the public API. The table is constant: any thread. */
#ifndef ANYTIME_SERVE_CONFIG_KEYS_H
#define ANYTIME_SERVE_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "anytime/server.h"

typedef enum cfg_type {
  CFG_INT,    /* int, a whole number in [lo, hi] */
  CFG_SIZE,   /* size_t, a whole number in [lo, hi] */
  CFG_DOUBLE, /* double in [lo, hi] */
  CFG_BOOL,   /* true/false (yes/no, on/off) */
  CFG_STRING, /* char[size] */
  CFG_PATH,   /* char[size], relative to the file's directory */
  CFG_CHOICE, /* char[size], one of `choices` ("a|b|c") */
  CFG_MODEL,  /* generator.model: a directory or a model spec (config.c) */
  CFG_SERVICE, /* a batch size -> milliseconds table: `off` is its point count (int),
                  off_b its int batch[] and off_s its double seconds[] */
} cfg_type;

enum {
  CFG_UNSET_NEG = 1u << 0,  /* default -1 = "the planner's own"; written only when >= 0 */
  CFG_UNSET_ZERO = 1u << 1, /* with CFG_UNSET_NEG: 0 is not a value either (written when > 0) */
  CFG_IF_SET = 1u << 2,     /* a string written only when not empty, a bool only
                               when true, a table only when it has points, an int
                               or double only when not its default */
  CFG_REQUIRED = 1u << 3,   /* models/variants: an entry without it is refused */
};

typedef struct cfg_key {
  const char *section; /* "server", "engine", "batching", "planner", "generator";
                          "models" and "variants" for the keys of one entry of
                          the models list and of a model's variants list */
  const char *key;
  cfg_type type;
  size_t off, size; /* the field in at_server_config; for "models" in
                       at_server_model_config, for "variants" in
                       at_server_variant_config */
  double lo, hi, def;
  const char *sdef;    /* default of a string or choice */
  const char *choices; /* CFG_CHOICE: "a|b|c" */
  unsigned flags;
  size_t off_b, off_s; /* CFG_SERVICE: the batch sizes and the seconds */
} cfg_key;

/* The table, in the order the writer writes it. */
const cfg_key *serve_cfg_keys(size_t *n);
/* The entry for section.key, or NULL. */
const cfg_key *serve_cfg_key(const char *section, const char *key);
/* Where the entry's value lives in cfg (to set it, or to read it); `base`
 * is the at_server_config, or for the "models" and "variants" sections the
 * entry (at_server_model_config / at_server_variant_config). */
void *serve_cfg_field(void *base, const cfg_key *k);
const void *serve_cfg_value(const void *base, const cfg_key *k);

#endif /* ANYTIME_SERVE_CONFIG_KEYS_H */
