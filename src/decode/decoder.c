/* src/decode/decoder.c — a decoder session over a Hugging Face "with past"
 * ONNX export: reads layers/heads/head_dim/vocab from the signature, and
 * runs steps either over the KV arena (gather, Run, scatter) or, as the
 * reference the tests compare against, by feeding the graph's own present
 * tensors back as the next past.
 *
 * DESIGN: one thread at a time (the generator's scheduler thread, or a
 * test). The decoder keeps grow-only scratch buffers for the step inputs,
 * so a step allocates nothing once warm apart from ORT's outputs. A decode
 * step's outputs are kept (`carry`): while the batch stays the same, the
 * next step's past is the last step's present, not a gather of the arena
 * (the arena still gets every new tail, for the step after a change).
 *
 * A graph in the GroupQueryAttention form (inputs seqlens_k and
 * total_sequence_length, as onnxruntime-genai's model builder writes it)
 * runs its steps in one [B, heads, M, head_dim] buffer per layer key/value
 * that is both the past input and the present output: ONNX Runtime writes
 * each new position in place. The buffer is filled from the arena when the
 * batch changes and kept while it does not (the carry rule above); a step
 * of more than one new position runs one sequence per Run (the kernel takes
 * several new positions with a past only at batch 1).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/decode.h"
#include "core/internal.h"

#define MAX_LAYERS 64

struct at_decoder {
  at_session *s;
  at_decoder_info info;
  char (*in_names)[48];  /* [2 * layers] past_key_values.{i}.key / .value */
  char (*out_names)[48]; /* [1 + 2 * layers] logits, present.{i}.key / .value */
  const char **out_ptrs;
  /* scratch */
  int64_t *ids, *mask, *pos;
  size_t ids_cap, pos_cap, mask_cap;
  float *past;
  size_t past_cap;
  at_tensor *inputs; /* ids, mask, [positions,] then 2 * layers pasts */
  int n_fixed;       /* 3 with position_ids, else 2: where the pasts start */
  /* the last decode step, whose presents may be the next step's past */
  at_outputs *carry;     /* NULL: nothing carried */
  int carry_n, carry_T;  /* sequences, positions in each present */
  uint64_t *carry_id;    /* [carry_n] in the presents' row order */
  int *carry_len;        /* [carry_n] each sequence's len after that step */
  int64_t *carry_mask;   /* [carry_n][carry_T] the mask rows of those positions */
  size_t carry_cap, carry_len_cap, carry_mask_cap;
  int *perm;             /* [n] item index of row i for a carried step */
  size_t perm_cap;
  uint64_t carried_steps, gathered_steps;
  /* the GroupQueryAttention form */
  bool gqa;
  float *gbuf;           /* [2 * layers][rows][heads][gM][head_dim] */
  size_t gbuf_cap;
  int gM;                /* positions per row of the buffer as last filled */
  int gcarry_n;          /* rows the buffer holds for the carried batch; 0: none */
  int32_t *seqlens;       /* [rows] then total_sequence_length */
  size_t seqlens_cap;
  int total_rank;         /* total_sequence_length: a scalar (0) or [1] (1) */
};

static void carry_drop(at_decoder *d) {
  at_outputs_free(d->carry);
  d->carry = NULL;
  d->carry_n = 0;
}

static void *grow(void *p, size_t *cap, size_t want, size_t elem) {
  if (want <= *cap) return p;
  size_t c = *cap ? *cap : 256;
  while (c < want) c *= 2;
  void *n = realloc(p, c * elem);
  if (!n) return NULL;
  *cap = c;
  return n;
}

void at_decoder_destroy(at_decoder *d) {
  if (!d) return;
  carry_drop(d);
  free(d->gbuf);
  free(d->seqlens);
  free(d->carry_id);
  free(d->carry_len);
  free(d->carry_mask);
  free(d->perm);
  at_session_destroy(d->s);
  free(d->in_names);
  free(d->out_names);
  free(d->out_ptrs);
  free(d->ids);
  free(d->mask);
  free(d->pos);
  free(d->past);
  free(d->inputs);
  free(d);
}

static const at_value_info *find(const at_value_info *v, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i].name, name) == 0) return &v[i];
  return NULL;
}

at_status at_decoder_create(const char *model_path, const at_session_params *sp, int n_positions,
                            at_decoder **out) {
  if (!model_path || !out) return at_fail(AT_ERR_INVALID_ARG, "decoder: NULL path or out");
  *out = NULL;
  at_decoder *d = calloc(1, sizeof *d);
  if (!d) return at_fail(AT_ERR_NOMEM, "decoder");
  at_session_params def = at_session_default_params();
  at_status st = at_session_create(model_path, sp ? sp : &def, &d->s);
  if (st != AT_OK) {
    free(d);
    return st;
  }
  const at_model_info *mi = at_session_info(d->s);
  /* the GroupQueryAttention form: positions from seqlens_k, no mask */
  const at_value_info *sk = find(mi->inputs, mi->n_inputs, "seqlens_k");
  const at_value_info *tsl = find(mi->inputs, mi->n_inputs, "total_sequence_length");
  d->gqa = sk != NULL;
  d->total_rank = tsl ? (int)tsl->ndim : 0;
  if (d->gqa && (sk->dtype != AT_DTYPE_INT32 || sk->ndim != 1 || !tsl ||
                 tsl->dtype != AT_DTYPE_INT32 || tsl->ndim > 1)) {
    at_decoder_destroy(d);
    return at_fail(AT_ERR_MODEL, "decoder %s: a GroupQueryAttention graph needs int32 "
                   "seqlens_k [batch] and int32 total_sequence_length inputs", model_path);
  }
  /* position_ids is optional: older GPT-2 exports count positions from the
   * past's length inside the graph */
  const char *need[] = {"input_ids", "attention_mask", "position_ids"};
  bool has_pos = d->gqa || find(mi->inputs, mi->n_inputs, "position_ids") != NULL;
  for (int i = 0; i < (d->gqa ? 1 : has_pos ? 3 : 2); i++) {
    const at_value_info *v = find(mi->inputs, mi->n_inputs, need[i]);
    if (!v || v->dtype != AT_DTYPE_INT64 || v->ndim != 2) {
      at_decoder_destroy(d);
      return at_fail(AT_ERR_MODEL, "decoder %s: needs an int64 [batch, seq] input '%s'",
                     model_path, need[i]);
    }
  }
  int layers = 0;
  char name[64];
  while (layers < MAX_LAYERS) {
    snprintf(name, sizeof name, "past_key_values.%d.key", layers);
    if (!find(mi->inputs, mi->n_inputs, name)) break;
    layers++;
  }
  if (layers == 0) {
    at_decoder_destroy(d);
    return at_fail(AT_ERR_MODEL,
                   "decoder %s: no past_key_values.0.key input (export the model with its KV "
                   "cache, Hugging Face 'with past' signature)",
                   model_path);
  }
  const at_value_info *k0 = find(mi->inputs, mi->n_inputs, "past_key_values.0.key");
  const at_value_info *lg = find(mi->outputs, mi->n_outputs, "logits");
  if (k0->ndim != 4 || k0->dtype != AT_DTYPE_FLOAT32 || k0->dims[1] < 1 || k0->dims[3] < 1) {
    at_decoder_destroy(d);
    return at_fail(AT_ERR_MODEL,
                   "decoder %s: past_key_values.0.key must be float [batch, heads, past, head_dim] "
                   "with fixed heads and head_dim",
                   model_path);
  }
  if (!lg || lg->ndim != 3 || lg->dtype != AT_DTYPE_FLOAT32 || lg->dims[2] < 1) {
    at_decoder_destroy(d);
    return at_fail(AT_ERR_MODEL, "decoder %s: needs a float [batch, seq, vocab] output 'logits'",
                   model_path);
  }
  d->info = (at_decoder_info){.layers = layers,
                              .heads = (int)k0->dims[1],
                              .head_dim = (int)k0->dims[3],
                              .vocab = (int)lg->dims[2],
                              .max_positions = n_positions,
                              .position_ids = has_pos};
  d->n_fixed = has_pos ? 3 : 2; /* GQA: input_ids, seqlens_k, total_sequence_length */
  d->in_names = calloc((size_t)2 * layers, sizeof *d->in_names);
  d->out_names = calloc((size_t)1 + 2 * layers, sizeof *d->out_names);
  d->out_ptrs = calloc((size_t)1 + 2 * layers, sizeof *d->out_ptrs);
  d->inputs = calloc((size_t)d->n_fixed + 2 * layers, sizeof *d->inputs);
  if (!d->in_names || !d->out_names || !d->out_ptrs || !d->inputs) {
    at_decoder_destroy(d);
    return at_fail(AT_ERR_NOMEM, "decoder names");
  }
  snprintf(d->out_names[0], sizeof d->out_names[0], "logits");
  for (int i = 0; i < layers; i++)
    for (int kv = 0; kv < 2; kv++) {
      const char *w = kv ? "value" : "key";
      snprintf(d->in_names[2 * i + kv], sizeof d->in_names[0], "past_key_values.%d.%s", i, w);
      snprintf(d->out_names[1 + 2 * i + kv], sizeof d->out_names[0], "present.%d.%s", i, w);
      const at_value_info *pi = find(mi->inputs, mi->n_inputs, d->in_names[2 * i + kv]);
      if (!pi || pi->ndim != 4 || pi->dims[1] != k0->dims[1] || pi->dims[3] != k0->dims[3] ||
          !find(mi->outputs, mi->n_outputs, d->out_names[1 + 2 * i + kv])) {
        at_log(AT_LOG_ERROR, "decode", "decoder %s: layer %d %s input/output missing or odd",
               model_path, i, w);
        at_decoder_destroy(d);
        return at_fail(AT_ERR_MODEL, "decoder %s: %s or %s missing or shaped unlike layer 0",
                       model_path, d->in_names[2 * i + kv], d->out_names[1 + 2 * i + kv]);
      }
    }
  for (int i = 0; i < 1 + 2 * layers; i++) d->out_ptrs[i] = d->out_names[i];
  *out = d;
  return AT_OK;
}

const at_decoder_info *at_decoder_get_info(const at_decoder *d) { return d ? &d->info : NULL; }

/* Fill the int64 inputs (ids, mask, positions when the graph takes them);
 * per item i: past length len[i], P padded past, S new tokens. */
static at_status fill_ids(at_decoder *d, int B, int S, int P, const int *len,
                          const int32_t *const *tok) {
  size_t n_ids = (size_t)B * S, n_mask = (size_t)B * (P + S);
  int64_t *ids = grow(d->ids, &d->ids_cap, n_ids, sizeof *ids);
  if (!ids) return at_fail(AT_ERR_NOMEM, "decoder ids");
  d->ids = ids;
  int64_t *pos = grow(d->pos, &d->pos_cap, n_ids, sizeof *pos);
  if (!pos) return at_fail(AT_ERR_NOMEM, "decoder positions");
  d->pos = pos;
  int64_t *mask = grow(d->mask, &d->mask_cap, n_mask, sizeof *mask);
  if (!mask) return at_fail(AT_ERR_NOMEM, "decoder mask");
  d->mask = mask;
  for (int i = 0; i < B; i++) {
    for (int j = 0; j < S; j++) {
      ids[(size_t)i * S + j] = tok[i][j];
      pos[(size_t)i * S + j] = len[i] + j;
    }
    int64_t *m = mask + (size_t)i * (P + S);
    for (int k = 0; k < P + S; k++) m[k] = (k < len[i] || k >= P) ? 1 : 0;
  }
  d->inputs[0] = (at_tensor){"input_ids", AT_DTYPE_INT64, 2, {B, S}, ids};
  d->inputs[1] = (at_tensor){"attention_mask", AT_DTYPE_INT64, 2, {B, P + S}, mask};
  if (d->info.position_ids) d->inputs[2] = (at_tensor){"position_ids", AT_DTYPE_INT64, 2, {B, S}, pos};
  return AT_OK;
}

/* Is this step the carried batch advanced by one position each (same ids,
 * any order)? Fills d->perm[row] = item index. */
static bool continues_carry(at_decoder *d, const at_decode_item *items, int n, int S) {
  if (!d->carry || n != d->carry_n || S != 1) return false;
  int *perm = grow(d->perm, &d->perm_cap, (size_t)n, sizeof *perm);
  if (!perm) return false;
  d->perm = perm;
  for (int r = 0; r < n; r++) {
    int k = -1;
    for (int i = 0; i < n && k < 0; i++)
      if (items[i].id == d->carry_id[r]) k = i;
    if (k < 0 || items[k].seq->len != d->carry_len[r]) return false;
    perm[r] = k;
  }
  return true;
}

/* Room in the carry's arrays for n rows of T positions. */
static bool carry_room(at_decoder *d, int n, int T) {
  uint64_t *id = grow(d->carry_id, &d->carry_cap, (size_t)n, sizeof *id);
  if (!id) return false;
  d->carry_id = id;
  int *len = grow(d->carry_len, &d->carry_len_cap, (size_t)n, sizeof *len);
  if (!len) return false;
  d->carry_len = len;
  int64_t *m = grow(d->carry_mask, &d->carry_mask_cap, (size_t)n * T, sizeof *m);
  if (!m) return false;
  d->carry_mask = m;
  return true;
}

/* Does the step name a carried sequence (and is not its continuation)? */
static bool touches_carry(const at_decoder *d, const at_decode_item *items, int n) {
  for (int i = 0; i < n; i++)
    for (int r = 0; r < d->carry_n; r++)
      if (items[i].id && items[i].id == d->carry_id[r]) return true;
  return false;
}

/* ---- the GroupQueryAttention form ---------------------------------------- */

/* The fixed inputs of a GQA Run of n rows of S new tokens: ids, seqlens_k
 * (each row's total length - 1) and total_sequence_length (the longest). */
static at_status gqa_fixed(at_decoder *d, int n, int S, const int *len,
                           const int32_t *const *tok) {
  int64_t *ids = grow(d->ids, &d->ids_cap, (size_t)n * S, sizeof *ids);
  if (!ids) return at_fail(AT_ERR_NOMEM, "decoder ids");
  d->ids = ids;
  int32_t *sl = grow(d->seqlens, &d->seqlens_cap, (size_t)n + 1, sizeof *sl);
  if (!sl) return at_fail(AT_ERR_NOMEM, "decoder seqlens");
  d->seqlens = sl;
  int32_t total = 0;
  for (int r = 0; r < n; r++) {
    for (int j = 0; j < S; j++) ids[(size_t)r * S + j] = tok[r][j];
    sl[r] = len[r] + S - 1;
    if (len[r] + S > total) total = len[r] + S;
  }
  sl[n] = total;
  d->inputs[0] = (at_tensor){"input_ids", AT_DTYPE_INT64, 2, {n, S}, ids};
  d->inputs[1] = (at_tensor){"seqlens_k", AT_DTYPE_INT32, 1, {n}, sl};
  d->inputs[2] = (at_tensor){"total_sequence_length", AT_DTYPE_INT32, d->total_rank, {1}, &sl[n]};
  return AT_OK;
}

/* Run with buf ([2 * layers][n][heads][M][head_dim]) as every past and
 * present; *o holds the logits (and views of buf). */
static at_status gqa_exec(at_decoder *d, int n, int M, float *buf, size_t n_out, at_outputs **o) {
  const at_decoder_info *in = &d->info;
  int H = in->heads, D = in->head_dim, L = in->layers;
  size_t per = (size_t)n * H * M * D;
  at_tensor into[1 + 2 * MAX_LAYERS];
  memset(into, 0, sizeof into);
  for (int i = 0; i < 2 * L; i++) {
    float *b = buf + per * (size_t)i;
    d->inputs[d->n_fixed + i] = (at_tensor){d->in_names[i], AT_DTYPE_FLOAT32, 4, {n, H, M, D}, b};
    into[1 + i] = (at_tensor){d->out_names[1 + i], AT_DTYPE_FLOAT32, 4, {n, H, M, D}, b};
  }
  return at_session_run_into(d->s, d->inputs, (size_t)d->n_fixed + 2 * L, d->out_ptrs, n_out,
                             into, o);
}

/* Is this step the carried batch, in the same row order, one position on? */
static bool gqa_continues(const at_decoder *d, const at_decode_item *items, int n, int S) {
  if (S != 1 || d->gcarry_n != n) return false;
  for (int r = 0; r < n; r++)
    if (!items[r].id || items[r].id != d->carry_id[r] || items[r].seq->len != d->carry_len[r])
      return false;
  return true;
}

/* One Run over n sequences (n == 1 when S > 1) in the shared buffer: filled
 * from the arena unless it holds this batch already, the new positions
 * scattered back. */
static at_status gqa_step(at_decoder *d, at_kv_arena *a, at_decode_item *items, int n, int S,
                          float *logits) {
  const at_decoder_info *in = &d->info;
  int H = in->heads, D = in->head_dim, L = in->layers, V = in->vocab;
  int lens[256], total = 0;
  const int32_t *toks[256];
  for (int r = 0; r < n; r++) {
    lens[r] = items[r].seq->len;
    toks[r] = items[r].tokens;
    if (lens[r] + S > total) total = lens[r] + S;
  }
  if (gqa_continues(d, items, n, S) && total <= d->gM) {
    d->carried_steps++;
  } else {
    d->gcarry_n = 0;
    /* room for this step and, when decoding, the next 64 */
    int M = ((total + 63) / 64) * 64 + (S == 1 ? 64 : 0);
    if (in->max_positions > 0 && M > in->max_positions)
      M = in->max_positions > total ? in->max_positions : total;
    size_t per = (size_t)n * H * M * D;
    float *g = grow(d->gbuf, &d->gbuf_cap, per * 2 * L, sizeof *g);
    if (!g) return at_fail(AT_ERR_NOMEM, "decoder past (%zu floats)", per * 2 * L);
    d->gbuf = g;
    d->gM = M;
    for (int i = 0; i < 2 * L; i++)
      for (int r = 0; r < n; r++)
        at_kv_gather(a, items[r].seq, i / 2, i % 2, g + per * (size_t)i + (size_t)r * H * M * D, M);
    d->gathered_steps++;
  }
  int M = d->gM;
  size_t per = (size_t)n * H * M * D;
  at_status st = gqa_fixed(d, n, S, lens, toks);
  at_outputs *o = NULL;
  if (st == AT_OK) st = gqa_exec(d, n, M, d->gbuf, (size_t)1 + 2 * L, &o);
  if (st != AT_OK) {
    d->gcarry_n = 0;
    return st;
  }
  at_tensor t;
  at_outputs_get(o, 0, &t);
  if (t.ndim != 3 || t.shape[0] != n || t.shape[1] != S || t.shape[2] != V) {
    at_outputs_free(o);
    d->gcarry_n = 0;
    return at_fail(AT_ERR_MODEL, "decoder step: logits came back with an unexpected shape");
  }
  for (int r = 0; r < n; r++)
    memcpy(logits + (size_t)r * V, (const float *)t.data + ((size_t)r * S + S - 1) * V,
           (size_t)V * sizeof(float));
  at_outputs_free(o);
  for (int i = 0; i < 2 * L && st == AT_OK; i++)
    for (int r = 0; r < n && st == AT_OK; r++)
      st = at_kv_scatter(a, items[r].seq, i / 2, i % 2,
                         d->gbuf + per * (size_t)i + (size_t)r * H * M * D, M, lens[r], S);
  if (st != AT_OK) {
    d->gcarry_n = 0;
    return st;
  }
  for (int r = 0; r < n; r++) items[r].seq->len += S;
  bool keep = S == 1 && carry_room(d, n, 1);
  for (int r = 0; r < n && keep; r++) keep = items[r].id != 0;
  d->gcarry_n = keep ? n : 0;
  for (int r = 0; r < n && keep; r++) {
    d->carry_id[r] = items[r].id;
    d->carry_len[r] = items[r].seq->len;
  }
  return AT_OK;
}

/* One sequence with its past (P positions of [heads][P][head_dim] per
 * tensor, NULL when P is 0) and n_new tokens in a buffer of exactly
 * P + n_new positions: the reference step and the NLL. *o: the outputs;
 * d->gbuf then holds the presents, [2 * layers][heads][P + n_new][head_dim]. */
static at_status gqa_single(at_decoder *d, float *const *past, int P, const int32_t *tokens,
                            int n_new, size_t n_out, at_outputs **o) {
  const at_decoder_info *in = &d->info;
  int H = in->heads, D = in->head_dim, L = in->layers, T = P + n_new;
  d->gcarry_n = 0; /* the buffer is this sequence's now */
  size_t per = (size_t)H * T * D;
  float *g = grow(d->gbuf, &d->gbuf_cap, per * 2 * L, sizeof *g);
  if (!g) return at_fail(AT_ERR_NOMEM, "decoder past (%zu floats)", per * 2 * L);
  d->gbuf = g;
  d->gM = T;
  memset(g, 0, per * 2 * L * sizeof *g);
  for (int i = 0; i < 2 * L && P > 0; i++)
    for (int h = 0; h < H; h++)
      memcpy(g + per * (size_t)i + (size_t)h * T * D, past[i] + (size_t)h * P * D,
             (size_t)P * D * sizeof(float));
  int lens[1] = {P};
  const int32_t *toks[1] = {tokens};
  at_status st = gqa_fixed(d, 1, n_new, lens, toks);
  if (st != AT_OK) return st;
  return gqa_exec(d, 1, T, g, n_out, o);
}

at_status at_decoder_step(at_decoder *d, at_kv_arena *a, at_decode_item *items, int n,
                          float *logits) {
  if (!d || !a || !items || n < 1 || !logits)
    return at_fail(AT_ERR_INVALID_ARG, "decoder step: bad arguments");
  const at_decoder_info *in = &d->info;
  const at_kv_layout *l = at_kv_arena_layout(a);
  if (l->layers != in->layers || l->heads != in->heads || l->head_dim != in->head_dim)
    return at_fail(AT_ERR_INVALID_ARG, "decoder step: arena layout does not match the model");
  int S = items[0].n_new, P = 0;
  if (n > 256) return at_fail(AT_ERR_LIMIT, "decoder step: at most 256 sequences per step");
  for (int i = 0; i < n; i++) {
    if (items[i].n_new != S || S < 1)
      return at_fail(AT_ERR_INVALID_ARG, "decoder step: every item needs the same n_new >= 1");
    at_kv_seq *q = items[i].seq;
    if (in->max_positions > 0 && q->len + S > in->max_positions)
      return at_fail(AT_ERR_LIMIT, "decoder step: position %d beyond the model's %d",
                     q->len + S, in->max_positions);
    if (q->len + S > q->n_blocks * l->block_tokens)
      return at_fail(AT_ERR_LIMIT, "decoder step: sequence holds %d blocks, needs room for %d",
                     q->n_blocks, q->len + S);
    if (q->len > P) P = q->len;
    if (!in->position_ids && q->len != items[0].seq->len)
      return at_fail(AT_ERR_INVALID_ARG, "decoder step: the graph takes no position_ids, so every "
                                         "sequence in a step needs the same past length");
  }
  if (d->gqa) {
    if (S == 1) return gqa_step(d, a, items, n, 1, logits);
    for (int i = 0; i < n; i++) { /* several new positions: one sequence per Run */
      at_status st = gqa_step(d, a, &items[i], 1, S, logits + (size_t)i * in->vocab);
      if (st != AT_OK) return st;
    }
    return AT_OK;
  }
  /* rows in the order of the carried presents when continuing them, else
   * in item order */
  int order[256], lens[256];
  const int32_t *toks[256];
  bool carried = continues_carry(d, items, n, S);
  if (!carried && touches_carry(d, items, n)) carry_drop(d);
  for (int r = 0; r < n; r++) {
    order[r] = carried ? d->perm[r] : r;
    lens[r] = items[order[r]].seq->len;
    toks[r] = items[order[r]].tokens;
  }
  if (carried) P = d->carry_T;
  at_status st = fill_ids(d, n, S, P, lens, toks);
  if (st != AT_OK) return st;
  int H = in->heads, D = in->head_dim, L = in->layers;
  if (carried) { /* the carried rows' own mask, then the new positions */
    for (int r = 0; r < n; r++) {
      int64_t *m = d->mask + (size_t)r * (P + S);
      memcpy(m, d->carry_mask + (size_t)r * P, (size_t)P * sizeof *m);
      for (int j = 0; j < S; j++) m[P + j] = 1;
    }
    for (int li = 0; li < L; li++)
      for (int kv = 0; kv < 2; kv++) {
        at_tensor t;
        at_outputs_get(d->carry, (size_t)1 + 2 * li + kv, &t);
        d->inputs[d->n_fixed + 2 * li + kv] =
            (at_tensor){d->in_names[2 * li + kv], AT_DTYPE_FLOAT32, 4, {n, H, P, D}, t.data};
      }
    d->carried_steps++;
  } else {
    size_t per = (size_t)n * H * P * D;
    float *past = grow(d->past, &d->past_cap, per * 2 * L + 1, sizeof *past);
    if (!past) return at_fail(AT_ERR_NOMEM, "decoder past (%zu floats)", per * 2 * L);
    d->past = past;
    for (int li = 0; li < L; li++)
      for (int kv = 0; kv < 2; kv++) {
        float *dst = past + per * (size_t)(2 * li + kv);
        for (int r = 0; r < n; r++)
          at_kv_gather(a, items[order[r]].seq, li, kv, dst + (size_t)r * H * P * D, P);
        d->inputs[d->n_fixed + 2 * li + kv] =
            (at_tensor){d->in_names[2 * li + kv], AT_DTYPE_FLOAT32, 4, {n, H, P, D}, dst};
      }
    d->gathered_steps++;
  }
  at_outputs *o = NULL;
  st = at_session_run(d->s, d->inputs, (size_t)d->n_fixed + 2 * L, d->out_ptrs, (size_t)1 + 2 * L,
                      &o);
  if (st != AT_OK) {
    carry_drop(d);
    return st;
  }
  at_tensor t;
  at_outputs_get(o, 0, &t);
  int V = in->vocab;
  if (t.ndim != 3 || t.shape[0] != n || t.shape[1] != S || t.shape[2] != V) {
    at_outputs_free(o);
    carry_drop(d);
    return at_fail(AT_ERR_MODEL, "decoder step: logits came back with an unexpected shape");
  }
  for (int r = 0; r < n; r++)
    memcpy(logits + (size_t)order[r] * V, (const float *)t.data + ((size_t)r * S + S - 1) * V,
           (size_t)V * sizeof(float));
  for (int li = 0; li < L && st == AT_OK; li++)
    for (int kv = 0; kv < 2 && st == AT_OK; kv++) {
      at_outputs_get(o, (size_t)1 + 2 * li + kv, &t);
      if (t.ndim != 4 || t.shape[0] != n || t.shape[1] != H || t.shape[2] != P + S ||
          t.shape[3] != D) {
        st = at_fail(AT_ERR_MODEL, "decoder step: present.%d has %lld positions, want %d", li,
                     (long long)(t.ndim == 4 ? t.shape[2] : -1), P + S);
        break;
      }
      for (int r = 0; r < n && st == AT_OK; r++)
        st = at_kv_scatter(a, items[order[r]].seq, li, kv,
                           (const float *)t.data + (size_t)r * H * (P + S) * D, P + S, P, S);
    }
  if (st != AT_OK) {
    at_outputs_free(o);
    carry_drop(d);
    return st;
  }
  for (int i = 0; i < n; i++) items[i].seq->len += S;
  /* a decode step of named sequences: its presents are the next past */
  bool keep = S == 1;
  for (int r = 0; r < n && keep; r++) keep = items[order[r]].id != 0;
  if (!keep) {
    at_outputs_free(o);
    return AT_OK;
  }
  if (!carry_room(d, n, P + S)) { /* keep nothing stale when the new one cannot be kept */
    at_outputs_free(o);
    carry_drop(d);
    return AT_OK;
  }
  at_outputs_free(d->carry);
  d->carry = o;
  d->carry_n = n;
  d->carry_T = P + S;
  for (int r = 0; r < n; r++) {
    d->carry_id[r] = items[order[r]].id;
    d->carry_len[r] = items[order[r]].seq->len;
  }
  memcpy(d->carry_mask, d->mask, (size_t)n * (P + S) * sizeof *d->carry_mask);
  return AT_OK;
}

void at_decoder_carry_stats(const at_decoder *d, uint64_t *carried, uint64_t *gathered) {
  if (carried) *carried = d ? d->carried_steps : 0;
  if (gathered) *gathered = d ? d->gathered_steps : 0;
}

void at_decoder_past_free(at_decoder_past *p) {
  if (!p || !p->kv) return;
  /* the number of tensors is not stored; kv is NULL-terminated */
  for (int i = 0; p->kv[i]; i++) free(p->kv[i]);
  free(p->kv);
  p->kv = NULL;
  p->len = 0;
}

at_status at_decoder_step_reference(at_decoder *d, const at_decoder_past *past,
                                    const int32_t *tokens, int n_new, float *logits,
                                    at_decoder_past *present) {
  if (!d || !tokens || n_new < 1 || !logits || !present)
    return at_fail(AT_ERR_INVALID_ARG, "decoder reference step: bad arguments");
  const at_decoder_info *in = &d->info;
  int P = past ? past->len : 0, L = in->layers, H = in->heads, D = in->head_dim;
  if (in->max_positions > 0 && P + n_new > in->max_positions)
    return at_fail(AT_ERR_LIMIT, "decoder reference step: position beyond the model's %d",
                   in->max_positions);
  const int32_t *toks[1] = {tokens};
  int lens[1] = {P};
  at_outputs *o = NULL;
  at_status st;
  if (d->gqa) {
    st = gqa_single(d, P ? past->kv : NULL, P, tokens, n_new, (size_t)1 + 2 * L, &o);
  } else {
    st = fill_ids(d, 1, n_new, P, lens, toks);
    if (st != AT_OK) return st;
    for (int i = 0; i < 2 * L; i++)
      d->inputs[d->n_fixed + i] = (at_tensor){d->in_names[i], AT_DTYPE_FLOAT32, 4, {1, H, P, D},
                                              P ? past->kv[i] : NULL};
    st = at_session_run(d->s, d->inputs, (size_t)d->n_fixed + 2 * L, d->out_ptrs,
                        (size_t)1 + 2 * L, &o);
  }
  if (st != AT_OK) return st;
  at_tensor t;
  at_outputs_get(o, 0, &t);
  memcpy(logits, (const float *)t.data + (size_t)(n_new - 1) * in->vocab,
         (size_t)in->vocab * sizeof(float));
  present->len = P + n_new;
  present->kv = calloc((size_t)2 * L + 1, sizeof *present->kv);
  if (!present->kv) {
    at_outputs_free(o);
    return at_fail(AT_ERR_NOMEM, "decoder present");
  }
  size_t bytes = (size_t)H * (P + n_new) * D * sizeof(float);
  for (int i = 0; i < 2 * L; i++) {
    at_outputs_get(o, (size_t)1 + i, &t);
    present->kv[i] = malloc(bytes);
    if (!present->kv[i]) {
      at_outputs_free(o);
      at_decoder_past_free(present);
      return at_fail(AT_ERR_NOMEM, "decoder present");
    }
    memcpy(present->kv[i], t.data, bytes);
  }
  at_outputs_free(o);
  return AT_OK;
}

at_status at_decoder_nll(at_decoder *d, const int32_t *tokens, int n, double *nll,
                         int *n_scored) {
  if (!d || !tokens || n < 2 || !nll || !n_scored)
    return at_fail(AT_ERR_INVALID_ARG, "decoder nll: needs at least two tokens");
  const at_decoder_info *in = &d->info;
  if (in->max_positions > 0 && n > in->max_positions)
    return at_fail(AT_ERR_LIMIT, "decoder nll: %d tokens, the model has %d positions", n,
                   in->max_positions);
  const int32_t *toks[1] = {tokens};
  int lens[1] = {0};
  at_outputs *o = NULL;
  at_status st;
  if (d->gqa) {
    st = gqa_single(d, NULL, 0, tokens, n, (size_t)1 + 2 * in->layers, &o);
  } else {
    st = fill_ids(d, 1, n, 0, lens, toks);
    if (st != AT_OK) return st;
    for (int i = 0; i < 2 * in->layers; i++)
      d->inputs[d->n_fixed + i] = (at_tensor){d->in_names[i], AT_DTYPE_FLOAT32, 4,
                                              {1, in->heads, 0, in->head_dim}, NULL};
    st = at_session_run(d->s, d->inputs, (size_t)d->n_fixed + 2 * in->layers, d->out_ptrs, 1, &o);
  }
  if (st != AT_OK) return st;
  at_tensor t;
  at_outputs_get(o, 0, &t);
  int V = in->vocab;
  double sum = 0;
  for (int i = 0; i + 1 < n; i++) {
    const float *row = (const float *)t.data + (size_t)i * V;
    float mx = row[0];
    for (int v = 1; v < V; v++)
      if (row[v] > mx) mx = row[v];
    double z = 0;
    for (int v = 0; v < V; v++) z += exp((double)row[v] - mx);
    sum += log(z) + mx - row[tokens[i + 1]];
  }
  at_outputs_free(o);
  *nll = sum;
  *n_scored = n - 1;
  return AT_OK;
}
