/* anytime/lm.h — opening a text-generation model: resolve a model family
 * (local directory, a name under ./models, or ORG/NAME[@rev] in the Hugging
 * Face cache), pick a variant, load its tokenizer.json and read what
 * generation needs from config.json / tokenizer_config.json (positions,
 * begin/end-of-text ids, whether prompts start with the BOS token).
 *
 * Ownership: at_lm_open returns an at_lm the caller closes with
 * at_lm_close(). The decoder inside may be handed to a generator with
 * at_lm_take_decoder() (the lm then no longer owns it).
 * Thread-safety: an at_lm is read-only after open, except take_decoder;
 * encode/decode need a workspace per thread (anytime/tokenizer.h).
 */
#ifndef ANYTIME_LM_H
#define ANYTIME_LM_H

#include "anytime/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/decode.h"
#include "anytime/generate.h"
#include "anytime/model.h"
#include "anytime/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct at_lm {
  at_model_desc *desc;
  const char *variant;   /* the variant opened ("fp32", "int8", ... or the relative path
                            of a graph in the directory), owned by desc or own_path */
  const char *model_path;
  at_tokenizer *tok;
  at_decoder *dec;       /* NULL after at_lm_take_decoder */
  int n_positions;       /* 0 if the config does not say */
  int32_t bos_id, eos_id; /* -1 if none; eos_id = eos_ids[0] */
  /* Every id that ends a generation: generation_config.json's eos_token_id
   * (a number or a list, as Llama 3 and Qwen2 exports write it), else
   * config.json's; ids outside the graph's vocabulary dropped. */
  int n_eos;
  int32_t eos_ids[AT_GEN_MAX_EOS];
  bool add_bos;          /* prepend bos_id to prompts */
  char *own_path;        /* a variant given as a file inside the model's directory (owned) */
} at_lm;

/* Open `spec` with variant `variant` (NULL = the family's first, most
 * accurate; or an .onnx file inside the model's directory given by its
 * relative path, e.g. "gqa/model.onnx", for a graph the directory does not
 * list as a variant). `sp` may be NULL for default session options, `rp` NULL for
 * default resolution plus ./models. AT_ERR_NOT_FOUND (no such model or
 * variant; the detail lists the variants), AT_ERR_MODEL (not a decoder or no
 * tokenizer.json), and the statuses of the pieces. */
AT_API at_status at_lm_open(const char *spec, const char *variant, const at_session_params *sp,
                            const at_model_resolve_params *rp, at_lm **out);
AT_API void at_lm_close(at_lm *lm);
AT_API at_decoder *at_lm_take_decoder(at_lm *lm);

/* Tokenise a prompt (BOS first when add_bos). *ids is malloc'd; the caller
 * frees it. AT_ERR_INVALID_ARG for an empty result. */
AT_API at_status at_lm_encode(const at_lm *lm, at_tok_workspace *ws, const char *text, size_t len,
                              int32_t **ids, int *n);

/* Tokenise a prompt rendered by the model's chat template: the template
 * writes every special token itself, so neither BOS nor the tokenizer's
 * post-processor adds any (Hugging Face's apply_chat_template does the
 * same). Otherwise as at_lm_encode. */
AT_API at_status at_lm_encode_rendered(const at_lm *lm, at_tok_workspace *ws, const char *text,
                                       size_t len, int32_t **ids, int *n);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_LM_H */
