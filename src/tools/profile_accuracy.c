/* src/tools/profile_accuracy.c — the accuracy pass of the profile pipeline
 * (tools/profile_impl.h): every text of the split goes through the batcher
 * (batches of up to 16) to one variant of the engine, and the task head's
 * output is scored: classifiers by argmax against the label, embedders by
 * leave-one-out 5-nearest-neighbour label agreement of the normalised
 * embeddings, pooled as the export says. The outputs stay in the items for
 * the plain-session cross-check (profile_service.c).
 *
 * Threads: the batcher's completion callback (on_item) runs on an engine
 * worker; it writes only its own item and counts down a latch, under the
 * latch's mutex, that the submitting thread waits on. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anytime/anytime.h"
#include "anytime/batcher.h"
#include "tools/profile_impl.h"

/* Counts the items of one submission still unanswered. */
typedef struct prof_latch {
  pthread_mutex_t m;
  pthread_cond_t c;
  int left;
} prof_latch;

static void on_item(void *user, at_status st, const at_item_result *r, const char *err) {
  (void)err;
  prof_item *it = user;
  it->st = st;
  if (st == AT_OK) {
    const float *d = r->outputs[it->head].data;
    if (!it->task) {
      memcpy(it->out, d, it->dim * sizeof(float));
    } else {
      at_pool(it->pool, d, r->len, it->dim, it->out);
    }
  }
  pthread_mutex_lock(&it->l->m);
  if (--it->l->left == 0) pthread_cond_signal(&it->l->c);
  pthread_mutex_unlock(&it->l->m);
}

/* Submit items[idx[0..n)] to the batcher for engine variant ev and wait
 * (the accuracy pass; the timing runs in at_profile_measure). */
static int run_items(at_batcher *b, int ev, prof_item *items, const size_t *idx, size_t n) {
  prof_latch l = {.left = (int)n};
  pthread_mutex_init(&l.m, NULL);
  pthread_cond_init(&l.c, NULL);
  for (size_t i = 0; i < n; i++) {
    prof_item *it = &items[idx[i]];
    it->l = &l;
    at_batch_item bi = {.input_ids = it->ids, .len = it->len, .done = on_item, .user = it};
    while (at_batcher_submit(b, ev, &bi) == AT_ERR_QUEUE_FULL) usleep(100);
  }
  pthread_mutex_lock(&l.m);
  while (l.left > 0) pthread_cond_wait(&l.c, &l.m);
  pthread_mutex_unlock(&l.m);
  pthread_mutex_destroy(&l.m);
  pthread_cond_destroy(&l.c);
  for (size_t i = 0; i < n; i++)
    if (items[idx[i]].st != AT_OK) return -1;
  return 0;
}

/* Variant v's accuracy through the batcher (batches of up to 16):
 * classifiers argmax against the label, embedders leave-one-out 5-NN label
 * agreement on the normalised vectors. */
int prof_measure_accuracy(prof_state *P, prof_model *M, int v) {
  const cli_dataset *ds = P->ds;
  at_batcher_params bp = at_batcher_default_params();
  bp.max_batch_size = 16;
  bp.max_queue_delay_us = 2000;
  bp.max_seq_len = M->max_tokens;
  bp.max_queued_items = ds->n + 16;
  at_batcher *b = NULL;
  at_status st;
  if ((st = at_batcher_create(M->eng, &bp, &b)) != AT_OK) return prof_report(st);
  if (run_items(b, v, M->items, M->all, ds->n) != 0)
    return fprintf(stderr, "anytime profile: inference failed\n"), AT_EXIT_FAIL;
  at_batcher_destroy(b);
  size_t correct = 0, dim = M->dim;
  prof_item *items = M->items;
  if (!M->task) {
    for (size_t i = 0; i < ds->n; i++) {
      size_t am = 0;
      for (size_t k = 1; k < dim; k++)
        if (items[i].out[k] > items[i].out[am]) am = k;
      correct += (int)am == ds->labels[i];
    }
  } else { /* leave-one-out 5-NN label agreement, cosine on normalised vectors */
    float *nv = malloc(ds->n * dim * sizeof(float));
    for (size_t i = 0; i < ds->n; i++) {
      memcpy(nv + i * dim, items[i].out, dim * sizeof *nv);
      at_l2_normalize(nv + i * dim, dim);
    }
    for (size_t i = 0; i < ds->n; i++) {
      double best[5] = {-2, -2, -2, -2, -2};
      int lab[5] = {0};
      for (size_t j = 0; j < ds->n; j++) {
        if (j == i) continue;
        double c = 0;
        for (size_t h = 0; h < dim; h++) c += (double)nv[i * dim + h] * nv[j * dim + h];
        if (c > best[4]) {
          int k = 4;
          while (k > 0 && c > best[k - 1]) best[k] = best[k - 1], lab[k] = lab[k - 1], k--;
          best[k] = c, lab[k] = ds->labels[j];
        }
      }
      int votes = 0;
      for (int k = 0; k < 5; k++) votes += lab[k] == 1;
      correct += (votes >= 3) == (ds->labels[i] == 1);
    }
    free(nv);
  }
  M->vr[v].accuracy = (double)correct / (double)ds->n;
  return AT_EXIT_OK;
}
