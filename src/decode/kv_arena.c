/* src/decode/kv_arena.c — the fixed arena of KV-cache blocks (see
 * anytime/decode.h): one allocation made at create, a free list of block
 * ids, all-or-nothing growth of a sequence's block table, and the gather /
 * scatter copies between a sequence's blocks and the dense past/present
 * tensors the decoder graph reads and writes, and forks that share a
 * prompt's full blocks between sequences (reference counts per block).
 *
 * DESIGN: no locks; the generator's scheduler thread is the only user.
 * Block b's memory is float[layers][2][heads][block_tokens][head_dim], so
 * one (layer, kv, head) run of a block is block_tokens * head_dim contiguous
 * floats and a gather is a handful of memcpy calls per block.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anytime/decode.h"
#include "core/internal.h"

struct at_kv_arena {
  at_kv_layout l;
  int n_blocks;
  float *mem;
  int *free_ids; /* stack of free block ids */
  int n_free;
  int *refs;     /* holders of each block (0: free) */
};

int at_kv_blocks_needed(int64_t tokens, double safety, int block_tokens) {
  if (tokens < 0 || !(safety > 0) || !isfinite(safety) || block_tokens < 1) return -1;
  if (tokens == 0) return 0;
  double want = ceil((double)tokens * safety / (double)block_tokens - 1e-9);
  if (want < 1) want = 1;
  if (want > 1e9) return -1;
  return (int)want;
}

size_t at_kv_block_bytes(const at_kv_layout *l) {
  return (size_t)l->layers * 2 * (size_t)l->heads * (size_t)l->block_tokens *
         (size_t)l->head_dim * sizeof(float);
}

at_status at_kv_arena_create(const at_kv_layout *l, int n_blocks, at_kv_arena **out) {
  if (!l || !out) return at_fail(AT_ERR_INVALID_ARG, "kv arena: NULL layout or out");
  *out = NULL;
  if (l->layers < 1 || l->heads < 1 || l->head_dim < 1 || l->block_tokens < 1 || n_blocks < 1)
    return at_fail(AT_ERR_INVALID_ARG,
                   "kv arena: layers %d, heads %d, head_dim %d, block_tokens %d and blocks %d "
                   "must all be >= 1",
                   l->layers, l->heads, l->head_dim, l->block_tokens, n_blocks);
  double bytes = (double)at_kv_block_bytes(l) * n_blocks;
  if (bytes > 16.0 * 1024 * 1024 * 1024)
    return at_fail(AT_ERR_LIMIT, "kv arena: %.1f GiB asked for, the limit is 16 GiB",
                   bytes / (1024.0 * 1024 * 1024));
  at_kv_arena *a = calloc(1, sizeof *a);
  if (!a) return at_fail(AT_ERR_NOMEM, "kv arena");
  a->l = *l;
  a->n_blocks = n_blocks;
  a->mem = calloc((size_t)n_blocks, at_kv_block_bytes(l));
  a->free_ids = malloc((size_t)n_blocks * sizeof *a->free_ids);
  a->refs = calloc((size_t)n_blocks, sizeof *a->refs);
  if (!a->mem || !a->free_ids || !a->refs) {
    at_kv_arena_destroy(a);
    return at_fail(AT_ERR_NOMEM, "kv arena: %.1f MiB", bytes / (1024.0 * 1024));
  }
  /* hand out low ids first */
  for (int i = 0; i < n_blocks; i++) a->free_ids[i] = n_blocks - 1 - i;
  a->n_free = n_blocks;
  *out = a;
  return AT_OK;
}

void at_kv_arena_destroy(at_kv_arena *a) {
  if (!a) return;
  free(a->mem);
  free(a->free_ids);
  free(a->refs);
  free(a);
}

const at_kv_layout *at_kv_arena_layout(const at_kv_arena *a) { return &a->l; }
int at_kv_arena_total_blocks(const at_kv_arena *a) { return a->n_blocks; }
int at_kv_arena_free_blocks(const at_kv_arena *a) { return a->n_free; }

/* Room for `want` entries in seq's block table. */
static at_status table_room(at_kv_seq *seq, int want) {
  if (want <= seq->cap) return AT_OK;
  int cap = seq->cap ? seq->cap : 8;
  while (cap < want) cap *= 2;
  int *nb = realloc(seq->blocks, (size_t)cap * sizeof *nb);
  if (!nb) return at_fail(AT_ERR_NOMEM, "kv block table");
  seq->blocks = nb;
  seq->cap = cap;
  return AT_OK;
}

at_status at_kv_seq_grow(at_kv_arena *a, at_kv_seq *seq, int n) {
  if (!a || !seq || n < 0) return at_fail(AT_ERR_INVALID_ARG, "kv grow: bad arguments");
  if (n == 0) return AT_OK;
  if (n > a->n_free)
    return at_fail(AT_ERR_LIMIT, "kv arena: %d blocks wanted, %d free", n, a->n_free);
  if (table_room(seq, seq->n_blocks + n) != AT_OK) return AT_ERR_NOMEM;
  for (int i = 0; i < n; i++) {
    int b = a->free_ids[--a->n_free];
    a->refs[b] = 1;
    seq->blocks[seq->n_blocks++] = b;
  }
  return AT_OK;
}

at_status at_kv_seq_fork(at_kv_arena *a, const at_kv_seq *parent, at_kv_seq *child,
                         int positions) {
  if (!a || !parent || !child || child == parent || child->n_blocks != 0 || positions < 0 ||
      positions > parent->len)
    return at_fail(AT_ERR_INVALID_ARG, "kv fork: bad arguments");
  int BT = a->l.block_tokens, full = positions / BT, part = positions % BT != 0;
  if (part && a->n_free < 1) return at_fail(AT_ERR_LIMIT, "kv arena: no free block for a fork");
  if (table_room(child, full + part) != AT_OK) return AT_ERR_NOMEM;
  for (int i = 0; i < full; i++) {
    int b = parent->blocks[i];
    a->refs[b]++;
    child->blocks[child->n_blocks++] = b;
  }
  if (part) {
    int b = a->free_ids[--a->n_free];
    a->refs[b] = 1;
    size_t bytes = at_kv_block_bytes(&a->l);
    memcpy((char *)a->mem + (size_t)b * bytes, (char *)a->mem + (size_t)parent->blocks[full] * bytes,
           bytes);
    child->blocks[child->n_blocks++] = b;
  }
  child->len = positions;
  return AT_OK;
}

int at_kv_seq_shared_blocks(const at_kv_arena *a, const at_kv_seq *seq) {
  int n = 0;
  for (int i = 0; a && seq && i < seq->n_blocks; i++) n += a->refs[seq->blocks[i]] > 1;
  return n;
}

void at_kv_seq_release(at_kv_arena *a, at_kv_seq *seq) {
  if (!a || !seq) return;
  for (int i = seq->n_blocks - 1; i >= 0; i--) {
    int b = seq->blocks[i];
    if (--a->refs[b] == 0) a->free_ids[a->n_free++] = b;
  }
  seq->n_blocks = 0;
  seq->len = 0;
}

void at_kv_seq_free(at_kv_seq *seq) {
  if (!seq) return;
  free(seq->blocks);
  seq->blocks = NULL;
  seq->cap = seq->n_blocks = seq->len = 0;
}

/* Start of the (layer, kv, head) run of block `b`. */
static float *run_ptr(const at_kv_arena *a, int b, int layer, int kv, int head) {
  const at_kv_layout *l = &a->l;
  size_t per_head = (size_t)l->block_tokens * l->head_dim;
  size_t off = ((((size_t)b * l->layers + layer) * 2 + kv) * l->heads + head) * per_head;
  return a->mem + off;
}

void at_kv_gather(const at_kv_arena *a, const at_kv_seq *seq, int layer, int kv, float *dst,
                  int P) {
  const at_kv_layout *l = &a->l;
  int D = l->head_dim, BT = l->block_tokens;
  for (int h = 0; h < l->heads; h++) {
    float *row = dst + (size_t)h * P * D;
    int done = 0;
    for (int bi = 0; done < seq->len; bi++) {
      int take = seq->len - done < BT ? seq->len - done : BT;
      memcpy(row + (size_t)done * D, run_ptr(a, seq->blocks[bi], layer, kv, h),
             (size_t)take * D * sizeof(float));
      done += take;
    }
    if (P > seq->len) memset(row + (size_t)seq->len * D, 0, (size_t)(P - seq->len) * D * sizeof(float));
  }
}

at_status at_kv_scatter(at_kv_arena *a, const at_kv_seq *seq, int layer, int kv,
                        const float *src, int T, int from, int n) {
  const at_kv_layout *l = &a->l;
  int D = l->head_dim, BT = l->block_tokens;
  if (seq->len + n > seq->n_blocks * BT || from < 0 || from + n > T)
    return at_fail(AT_ERR_LIMIT, "kv scatter: %d positions after %d do not fit %d blocks", n,
                   seq->len, seq->n_blocks);
  for (int h = 0; h < l->heads; h++) {
    const float *row = src + ((size_t)h * T + from) * D;
    int pos = seq->len, done = 0;
    while (done < n) {
      int bi = pos / BT, off = pos % BT;
      int take = BT - off < n - done ? BT - off : n - done;
      memcpy(run_ptr(a, seq->blocks[bi], layer, kv, h) + (size_t)off * D, row + (size_t)done * D,
             (size_t)take * D * sizeof(float));
      done += take;
      pos += take;
    }
  }
  return AT_OK;
}
