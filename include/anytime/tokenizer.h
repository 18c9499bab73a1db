/* anytime/tokenizer.h — text to token ids, the way Hugging Face tokenizers do it.
 *
 * An at_tokenizer is loaded from a Hugging Face `tokenizer.json` (or from a
 * bare BERT `vocab.txt`) and reproduces the Hugging Face `tokenizers` library
 * token for token: the same ids, type ids, attention mask, special-token mask
 * and offsets. docs/tokenizers.md lists the supported components and how
 * parity is tested. A component that anytime does not implement is a load
 * error (AT_ERR_UNSUPPORTED) whose detail names it; there is no fallback.
 *
 * Ownership and threads: a tokenizer is immutable after loading, so one
 * tokenizer may be used by any number of threads at once. All per-call
 * scratch memory lives in an at_tok_workspace, which belongs to one thread at
 * a time (give each thread its own). A workspace grows to the largest input
 * it has seen and then stops allocating: the encode path does no per-token
 * allocation. Results (at_encoding) point into the workspace and stay valid
 * until the next call that uses that workspace.
 *
 * Text: input must be valid UTF-8; anything else is rejected with
 * AT_ERR_INVALID_ARG naming the byte offset (the Rust library cannot even
 * receive such input: its API takes `&str`). Offsets are byte offsets into
 * the caller's text by default, or code-point offsets with
 * AT_OFFSETS_CHARS (what the Python and Node bindings report).
 */
#ifndef ANYTIME_TOKENIZER_H
#define ANYTIME_TOKENIZER_H

#include "anytime/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anytime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct at_tokenizer at_tokenizer;
typedef struct at_tok_workspace at_tok_workspace;

/* Upper bounds that keep hostile input from exhausting memory. */
#define AT_TOKENIZER_MAX_JSON_BYTES ((size_t)512 << 20) /* tokenizer.json size */
#define AT_TOKENIZER_MAX_TEXT_BYTES ((size_t)64 << 20)  /* one input text */

typedef enum at_offset_unit {
  AT_OFFSETS_BYTES = 0, /* byte offsets into the UTF-8 input (default) */
  AT_OFFSETS_CHARS = 1, /* Unicode code-point offsets (HF Python/Node bindings) */
} at_offset_unit;

/* Which end truncation cuts (at_encode_params.truncation_direction). */
typedef enum at_trunc_direction {
  AT_TRUNC_AS_TOKENIZER = 0, /* tokenizer.json's "direction" (Right when absent) */
  AT_TRUNC_RIGHT = 1,        /* keep the first tokens (cut the end) */
  AT_TRUNC_LEFT = 2,         /* keep the last tokens (cut the start) */
} at_trunc_direction;

typedef struct at_encode_params {
  bool add_special_tokens; /* run the post-processor's templates; default true */
  at_offset_unit offsets;  /* default AT_OFFSETS_BYTES */
  /* Truncation: -1 = as tokenizer.json says (default), 0 = off, N = cut to N
   * tokens (including special tokens), longest-first for pairs, on the side
   * truncation_direction says (each sequence of a pair on that side; special
   * tokens are added after cutting, so they stay). */
  int max_length;
  at_trunc_direction truncation_direction; /* default AT_TRUNC_AS_TOKENIZER */
  /* Padding: -1 = as tokenizer.json says (default), 0 = off, N = pad each
   * encoding on the right to at least N with the tokenizer's pad token
   * (or id 0 if it has none). Batch calls with tokenizer.json's
   * "BatchLongest" strategy pad to the longest encoding of the batch. */
  int pad_to;
} at_encode_params;

/* One encoded sequence (or pair). Every array has `n` elements, owned by the
 * workspace and valid until the workspace is used again or destroyed. */
typedef struct at_encoding {
  size_t n;
  const int32_t *ids;
  const int32_t *type_ids;
  const int32_t *attention_mask;      /* 1 for real tokens, 0 for padding */
  const int32_t *special_tokens_mask; /* 1 for added special/pad tokens */
  const int32_t *word_ids;            /* pre-token index, -1 for special/pad */
  const uint32_t (*offsets)[2];       /* [start, end) in the chosen unit;
                                         (0,0) for special and pad tokens */
  const char *const *tokens;          /* token strings, NUL-terminated, owned by the
                                         tokenizer or (the raw text of an unknown
                                         Unigram piece, an added token matched with
                                         its stripped spaces) by the workspace */
  const uint32_t *token_lens;         /* byte length of each token string: use it
                                         when a string may hold a NUL byte */
} at_encoding;

/* Defaults as documented on each field. */
AT_API at_encode_params at_encode_default_params(void);

/* Load a tokenizer: `path` may be a tokenizer.json, a vocab.txt (BERT
 * uncased conventions: BertNormalizer with lowercasing, BertPreTokenizer,
 * WordPiece "##", [CLS]/[SEP] template, [PAD]/[UNK]/[CLS]/[SEP]/[MASK] as
 * special tokens), or a directory holding either (tokenizer.json preferred).
 * On success *out owns the tokenizer; free it with at_tokenizer_destroy().
 * Returns AT_OK, AT_ERR_INVALID_ARG, AT_ERR_NOT_FOUND, AT_ERR_IO,
 * AT_ERR_PARSE (malformed JSON or vocabulary; detail says where),
 * AT_ERR_UNSUPPORTED (a component anytime does not implement; detail names
 * it), AT_ERR_LIMIT (file too large), AT_ERR_NOMEM. */
AT_API at_status at_tokenizer_load(const char *path, at_tokenizer **out);

/* Same as at_tokenizer_load() for a tokenizer.json held in memory (`json`
 * need not be NUL-terminated). Same statuses. */
AT_API at_status at_tokenizer_from_json(const char *json, size_t len, at_tokenizer **out);

/* A BERT WordPiece tokenizer from vocab.txt content in memory (one token per
 * line, id = line number). `lowercase` selects uncased (true) or cased
 * normalisation. Same statuses. */
AT_API at_status at_tokenizer_from_vocab_txt(const char *txt, size_t len, bool lowercase,
                                             at_tokenizer **out);

/* Free a tokenizer. NULL is a no-op. No call may be using it. */
AT_API void at_tokenizer_destroy(at_tokenizer *t);

/* Create a workspace. *out is freed with at_tok_workspace_destroy().
 * Returns AT_OK or AT_ERR_NOMEM. Thread-safety: one thread at a time. */
AT_API at_status at_tok_workspace_create(at_tok_workspace **out);
AT_API void at_tok_workspace_destroy(at_tok_workspace *ws);

/* Encode `text` (and `pair`, or NULL) into *out. `params` NULL = defaults.
 * Thread-safe with respect to `t`; `ws` must not be shared concurrently.
 * Returns AT_OK, AT_ERR_INVALID_ARG (NULL argument or invalid UTF-8: detail
 * names the byte offset), AT_ERR_LIMIT (text longer than
 * AT_TOKENIZER_MAX_TEXT_BYTES, or truncation impossible: max_length smaller
 * than the special tokens it must keep), AT_ERR_NOMEM. */
AT_API at_status at_tokenizer_encode(const at_tokenizer *t, at_tok_workspace *ws, const char *text,
                                     size_t len, const char *pair, size_t pair_len,
                                     const at_encode_params *params, at_encoding *out);

/* How many leading tokens of an encoding of prompt + text belong to the
 * prompt, as sentence-transformers counts them for include_prompt: false:
 * the prompt's own encoding with special tokens, less one ([CLS] and the
 * prompt's tokens; the final [SEP] is the text's). 0 for an empty encoding.
 * Same statuses as at_tokenizer_encode(). */
AT_API at_status at_tokenizer_prompt_tokens(const at_tokenizer *t, at_tok_workspace *ws,
                                            const char *prompt, size_t *out);

/* Encode `n` single texts at once; out[i] describes texts[i]. Padding with
 * the "BatchLongest" strategy pads to the batch's longest encoding. Same
 * statuses as at_tokenizer_encode(); on failure none of out[] is valid. */
AT_API at_status at_tokenizer_encode_batch(const at_tokenizer *t, at_tok_workspace *ws,
                                           const char *const *texts, const size_t *lens, size_t n,
                                           const at_encode_params *params, at_encoding *out);

/* A text model's inputs for `n` encodings padded to L positions (>= every
 * enc[i].n), in the graph's input order: "input_ids" (padded with pad_id),
 * "attention_mask" (an encoding without one gives 1 for its tokens) and
 * "token_type_ids" (0 where an encoding has none), padding 0, each in the
 * integer type the graph declares (INT64 or INT32). `buf` holds 3 * n * L
 * int64 and is what out[] (room for 3) borrows. Returns AT_OK with *n_out tensors;
 * AT_ERR_UNSUPPORTED naming the input when the graph has no input_ids,
 * wants an input text cannot give, or one is not INT64/INT32;
 * AT_ERR_INVALID_ARG on NULL or an empty batch. Pure; any thread. */
struct at_model_info;
struct at_tensor;
AT_API at_status at_encodings_to_inputs(const struct at_model_info *mi, const at_encoding *enc, size_t n,
                                        size_t L, int32_t pad_id, int64_t *buf, struct at_tensor *out,
                                        size_t *n_out);

/* Ids back to text through the tokenizer's decoder (WordPiece, ByteLevel,
 * Metaspace, ...; tokens joined by spaces when it has none). The result is
 * NUL-terminated, owned by `ws`, valid until its next use; *len_out (may be
 * NULL) gets its length. Returns AT_OK, AT_ERR_INVALID_ARG (NULL argument or
 * an id outside the vocabulary), AT_ERR_NOMEM. */
AT_API at_status at_tokenizer_decode(const at_tokenizer *t, at_tok_workspace *ws, const int32_t *ids,
                                     size_t n, bool skip_special_tokens, const char **text_out,
                                     size_t *len_out);

/* Vocabulary size including added tokens (one past the largest id). */
AT_API size_t at_tokenizer_vocab_size(const at_tokenizer *t);
/* The string of token `id`, or NULL if no token has that id. Owned by `t`. */
AT_API const char *at_tokenizer_id_to_token(const at_tokenizer *t, int32_t id);
/* The id of token string `token` (model vocabulary or added tokens), or -1. */
AT_API int32_t at_tokenizer_token_to_id(const at_tokenizer *t, const char *token);
/* The padding id declared by tokenizer.json (or the id of [PAD]/<pad>), or 0. */
AT_API int32_t at_tokenizer_pad_id(const at_tokenizer *t);
/* A one-line description of the pipeline, e.g. "BertNormalizer >
 * BertPreTokenizer > WordPiece(30522) > BertProcessing". Owned by `t`. */
AT_API const char *at_tokenizer_describe(const at_tokenizer *t);

#ifdef __cplusplus
}
#endif
#endif /* ANYTIME_TOKENIZER_H */
