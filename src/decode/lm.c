/* src/decode/lm.c — open a text-generation model (see anytime/lm.h):
 * resolution, variant choice, tokenizer and decoder; the fields generation
 * needs from config.json, generation_config.json and tokenizer_config.json
 * (bos/eos ids, add_bos_token) come from the model description, read by
 * the one export reader (src/model/export.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "anytime/lm.h"
#include "core/internal.h"

void at_lm_close(at_lm *lm) {
  if (!lm) return;
  at_decoder_destroy(lm->dec);
  at_tokenizer_destroy(lm->tok);
  at_model_desc_free(lm->desc);
  free(lm->own_path);
  free(lm);
}

at_decoder *at_lm_take_decoder(at_lm *lm) {
  at_decoder *d = lm ? lm->dec : NULL;
  if (lm) lm->dec = NULL;
  return d;
}

/* A relative path to a regular .onnx file under dir, without ".." parts. */
static bool is_graph_in_dir(const char *dir, const char *rel) {
  size_t n = strlen(rel);
  if (rel[0] == '/' || n < 6 || strcmp(rel + n - 5, ".onnx") || strstr(rel, ".."))
    return false;
  char p[4096];
  struct stat st;
  int w = snprintf(p, sizeof p, "%s/%s", dir, rel);
  return w > 0 && (size_t)w < sizeof p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

at_status at_lm_open(const char *spec, const char *variant, const at_session_params *sp,
                     const at_model_resolve_params *rp, at_lm **out) {
  if (!spec || !out) return at_fail(AT_ERR_INVALID_ARG, "lm: NULL spec or out");
  *out = NULL;
  at_model_resolve_params def = at_model_resolve_default_params();
  static const char *const k_dirs[] = {"models"};
  if (!rp) {
    def.model_dirs = k_dirs;
    def.n_model_dirs = 1;
    rp = &def;
  }
  at_lm *lm = calloc(1, sizeof *lm);
  if (!lm) return at_fail(AT_ERR_NOMEM, "lm");
  at_status st = at_model_resolve(spec, rp, &lm->desc);
  if (st != AT_OK) {
    free(lm);
    return st;
  }
  const at_model_desc *d = lm->desc;
  int vi = variant ? at_model_desc_variant_index(d, variant) : 0;
  if (vi < 0 && variant && d->dir && is_graph_in_dir(d->dir, variant)) {
    size_t cap = strlen(d->dir) + strlen(variant) + 2;
    lm->own_path = malloc(cap);
    if (!lm->own_path) {
      at_lm_close(lm);
      return at_fail(AT_ERR_NOMEM, "lm");
    }
    snprintf(lm->own_path, cap, "%s/%s", d->dir, variant);
    lm->variant = lm->own_path + strlen(d->dir) + 1; /* the relative path, in storage lm owns */
    lm->model_path = lm->own_path;
  } else if (vi < 0) {
    char names[512] = "";
    for (size_t i = 0; i < d->n_variants; i++) {
      size_t used = strlen(names);
      snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", d->variants[i].name);
    }
    at_lm_close(lm);
    return at_fail(AT_ERR_NOT_FOUND, "model %s has no variant '%s' (it has: %s)", spec, variant,
                   names);
  }
  if (vi >= 0) {
    lm->variant = d->variants[vi].name;
    lm->model_path = d->variants[vi].path;
  }
  if (!d->tokenizer_path || d->tokenizer_kind != AT_TOKENIZER_JSON) {
    at_lm_close(lm);
    return at_fail(AT_ERR_MODEL, "model %s: a generation model needs a tokenizer.json in %s", spec,
                   d->dir);
  }
  if ((st = at_tokenizer_load(d->tokenizer_path, &lm->tok)) != AT_OK) {
    at_lm_close(lm);
    return st;
  }
  /* bos/eos and add_bos_token: the export reader's (src/model/export.c) */
  int64_t npos = d->max_position_embeddings;
  lm->n_positions = npos > 0 && npos < (1 << 24) ? (int)npos : 0;
  lm->bos_id = (int32_t)d->bos_token_id;
  lm->n_eos = 0;
  for (size_t i = 0; i < d->n_eos && lm->n_eos < AT_GEN_MAX_EOS; i++)
    lm->eos_ids[lm->n_eos++] = (int32_t)d->eos_token_ids[i];
  lm->eos_id = lm->n_eos ? lm->eos_ids[0] : -1;
  lm->add_bos = d->add_bos_token && lm->bos_id >= 0;
  if ((st = at_decoder_create(lm->model_path, sp, lm->n_positions, &lm->dec)) != AT_OK) {
    at_lm_close(lm);
    return st;
  }
  int V = at_decoder_get_info(lm->dec)->vocab;
  size_t tv = at_tokenizer_vocab_size(lm->tok);
  if ((size_t)V < tv) {
    at_lm_close(lm);
    return at_fail(AT_ERR_MODEL, "model %s: tokenizer has %zu tokens, the graph's logits only %d",
                   spec, tv, V);
  }
  int kept = 0; /* ids the graph cannot produce end nothing */
  for (int i = 0; i < lm->n_eos; i++)
    if (lm->eos_ids[i] >= 0 && lm->eos_ids[i] < V) lm->eos_ids[kept++] = lm->eos_ids[i];
  lm->n_eos = kept;
  lm->eos_id = kept ? lm->eos_ids[0] : -1;
  if (lm->bos_id >= V) lm->bos_id = -1, lm->add_bos = false;
  *out = lm;
  return AT_OK;
}

static at_status encode(const at_lm *lm, at_tok_workspace *ws, const char *text, size_t len,
                        bool specials, int32_t **ids, int *n) {
  if (!lm || !ws || !text || !ids || !n) return at_fail(AT_ERR_INVALID_ARG, "lm encode: NULL");
  *ids = NULL;
  *n = 0;
  at_encode_params ep = at_encode_default_params();
  ep.max_length = 0;
  ep.pad_to = 0;
  ep.add_special_tokens = specials;
  at_encoding e;
  at_status st = at_tokenizer_encode(lm->tok, ws, text, len, NULL, 0, &ep, &e);
  if (st != AT_OK) return st;
  /* add_bos_token asks for one BOS; a Llama tokenizer.json's post-processor
   * already adds it (as HF's fast tokenizer does, rebuilt from the same
   * flag), and a second BOS changes every logit after it */
  bool bos = specials && lm->add_bos && !(e.n > 0 && e.ids[0] == lm->bos_id);
  size_t total = e.n + (bos ? 1 : 0);
  if (total == 0) return at_fail(AT_ERR_INVALID_ARG, "the prompt is empty");
  if (total > (1u << 24)) return at_fail(AT_ERR_LIMIT, "the prompt has %zu tokens", total);
  int32_t *out = malloc(total * sizeof *out);
  if (!out) return at_fail(AT_ERR_NOMEM, "prompt ids");
  size_t k = 0;
  if (bos) out[k++] = lm->bos_id;
  memcpy(out + k, e.ids, e.n * sizeof *out);
  *ids = out;
  *n = (int)total;
  return AT_OK;
}

at_status at_lm_encode(const at_lm *lm, at_tok_workspace *ws, const char *text, size_t len,
                       int32_t **ids, int *n) {
  return encode(lm, ws, text, len, true, ids, n);
}

at_status at_lm_encode_rendered(const at_lm *lm, at_tok_workspace *ws, const char *text,
                                size_t len, int32_t **ids, int *n) {
  return encode(lm, ws, text, len, false, ids, n);
}
