/* tests/unit/test_session.c — the plain session: signature reading, correct
 * outputs on a graph whose answer is known (y = 2x + 1), output selection,
 * a clear error for every kind of bad call or bad model file, the count
 * of live ORT objects that ANYTIME_ORT_LEAK_CHECK reads at exit, and the
 * CPU memory arena turned off (cpu_mem_arena = false, what the server's
 * workers run) answering bit for bit what the arena gives, serially and
 * from two threads at once on one session. */
#include <pthread.h>
#include <unistd.h>

#include "anytime/anytime.h"
#include "testutil.h"

static void test_signature(void **state) {
  (void)state;
  at_session *s = NULL;
  assert_int_equal(at_session_create(test_data("models/tiny_encoder.onnx"), NULL, &s), AT_OK);
  const at_model_info *mi = at_session_info(s);
  assert_int_equal(mi->n_inputs, 2);
  assert_int_equal(mi->n_outputs, 2);
  assert_string_equal(mi->inputs[0].name, "input_ids");
  assert_int_equal(mi->inputs[0].dtype, AT_DTYPE_INT64);
  assert_int_equal(mi->inputs[0].ndim, 2);
  assert_int_equal(mi->inputs[0].dims[0], -1);
  assert_string_equal(mi->inputs[0].dim_names[0], "batch");
  assert_string_equal(mi->inputs[0].dim_names[1], "seq");
  assert_string_equal(mi->outputs[0].name, "logits");
  assert_int_equal(mi->outputs[0].dims[1], 3);
  assert_int_equal(mi->opset, 17);
  assert_int_equal(at_session_output_index(s, "pooled"), 1);
  assert_int_equal(at_session_output_index(s, "nope"), -1);
  at_session_destroy(s);
  at_session_destroy(NULL);
}

static void test_known_answer_and_errors(void **state) {
  (void)state;
  at_session *s = NULL;
  assert_int_equal(at_session_create(test_data("models/fixed_scale.onnx"), NULL, &s), AT_OK);
  float x[6] = {0, 1, -2, 3.5f, 1e3f, -0.25f};
  at_tensor in = {.name = "x", .dtype = AT_DTYPE_FLOAT32, .ndim = 2, .shape = {2, 3}, .data = x};
  at_outputs *o = NULL;
  assert_int_equal(at_session_run(s, &in, 1, NULL, 0, &o), AT_OK);
  assert_int_equal(at_outputs_count(o), 1);
  at_tensor y;
  assert_int_equal(at_outputs_get(o, 0, &y), AT_OK);
  assert_string_equal(y.name, "y");
  assert_int_equal(y.ndim, 2);
  for (int i = 0; i < 6; i++) assert_true(((float *)y.data)[i] == 2 * x[i] + 1);
  assert_int_equal(at_outputs_get(o, 1, &y), AT_ERR_INVALID_ARG);
  at_outputs_free(o);

  /* wrong shape, wrong type, wrong rank, wrong name, duplicate, too few */
  in.shape[1] = 4;
  assert_int_equal(at_session_run(s, &in, 1, NULL, 0, &o), AT_ERR_SHAPE);
  assert_non_null(strstr(at_last_error(), "[2,4]"));
  assert_non_null(strstr(at_last_error(), "[2,3]"));
  in.shape[1] = 3;
  in.dtype = AT_DTYPE_INT64;
  assert_int_equal(at_session_run(s, &in, 1, NULL, 0, &o), AT_ERR_SHAPE);
  assert_non_null(strstr(at_last_error(), "INT64"));
  in.dtype = AT_DTYPE_FLOAT32;
  in.ndim = 1;
  assert_int_equal(at_session_run(s, &in, 1, NULL, 0, &o), AT_ERR_SHAPE);
  in.ndim = 2;
  in.name = "z";
  assert_int_equal(at_session_run(s, &in, 1, NULL, 0, &o), AT_ERR_SHAPE);
  assert_non_null(strstr(at_last_error(), "'z'"));
  in.name = "x";
  at_tensor two[2] = {in, in};
  assert_int_equal(at_session_run(s, two, 2, NULL, 0, &o), AT_ERR_SHAPE);
  assert_int_equal(at_session_run(s, NULL, 0, NULL, 0, &o), AT_ERR_SHAPE);
  const char *bad_out[] = {"nope"};
  assert_int_equal(at_session_run(s, &in, 1, bad_out, 1, &o), AT_ERR_NOT_FOUND);
  in.data = NULL;
  assert_int_equal(at_session_run(s, &in, 1, NULL, 0, &o), AT_ERR_INVALID_ARG);
  assert_null(o);
  at_session_destroy(s);
}

static void test_output_selection(void **state) {
  (void)state;
  at_session *s = NULL;
  assert_int_equal(at_session_create(test_data("models/tiny_encoder.onnx"), NULL, &s), AT_OK);
  int64_t ids[4] = {1, 2, 3, 4}, mask[4] = {1, 1, 1, 0};
  at_tensor in[2] = {
      {.name = "attention_mask", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, 4}, .data = mask},
      {.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, 4}, .data = ids},
  };
  const char *want[] = {"pooled"};
  at_outputs *o = NULL;
  assert_int_equal(at_session_run(s, in, 2, want, 1, &o), AT_OK);
  at_tensor t;
  assert_int_equal(at_outputs_count(o), 1);
  assert_int_equal(at_outputs_get(o, 0, &t), AT_OK);
  assert_string_equal(t.name, "pooled");
  assert_int_equal(t.shape[1], 16);
  at_outputs_free(o);
  /* an id outside the embedding table is ORT's error, reported as such */
  ids[0] = 100000;
  assert_int_equal(at_session_run(s, in, 2, NULL, 0, &o), AT_ERR_ORT);
  assert_true(strlen(at_last_error()) > 0);
  at_session_destroy(s);
}

static void test_bad_model_files(void **state) {
  (void)state;
  at_session *s = (at_session *)0x1;
  assert_int_equal(at_session_create("/nonexistent/model.onnx", NULL, &s), AT_ERR_NOT_FOUND);
  assert_null(s);
  assert_non_null(strstr(at_last_error(), "/nonexistent/model.onnx"));
  assert_int_equal(at_session_create(test_data("models"), NULL, &s), AT_ERR_NOT_FOUND);
  char tmpl[] = "/tmp/anytime-corrupt-XXXXXX";
  int fd = mkstemp(tmpl);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "\x08\x07garbage-not-onnx", 19), 19);
  close(fd);
  assert_int_equal(at_session_create(tmpl, NULL, &s), AT_ERR_MODEL);
  assert_non_null(strstr(at_last_error(), tmpl));
  unlink(tmpl);
  assert_int_equal(at_session_create(NULL, NULL, &s), AT_ERR_INVALID_ARG);
}

/* The live-object count behind ANYTIME_ORT_LEAK_CHECK: a session and the
 * outputs of a Run are counted while they live and not after; a failed Run
 * leaves nothing counted. */
/* The shipped int8 classifier, batch 1, ids of length `len` (2..64). */
static int run_logits(at_session *s, int len, int salt, float out[2]) {
  int64_t ids[64], mask[64];
  for (int t = 0; t < len; t++) {
    ids[t] = t == 0 ? 2 : t == len - 1 ? 3 : 100 + (t * 37 + salt * 101) % 5000;
    mask[t] = 1;
  }
  at_tensor in[2] = {
      {.name = "input_ids", .dtype = AT_DTYPE_INT64, .ndim = 2, .shape = {1, len}, .data = ids},
      {.name = "attention_mask",
       .dtype = AT_DTYPE_INT64,
       .ndim = 2,
       .shape = {1, len},
       .data = mask},
  };
  const char *want[] = {"logits"};
  at_outputs *o = NULL;
  if (at_session_run(s, in, 2, want, 1, &o) != AT_OK) return -1;
  at_tensor t;
  int ok = at_outputs_get(o, 0, &t) == AT_OK && t.dtype == AT_DTYPE_FLOAT32 && t.ndim == 2 &&
           t.shape[0] == 1 && t.shape[1] == 2;
  if (ok) memcpy(out, t.data, 2 * sizeof(float));
  at_outputs_free(o);
  return ok ? 0 : -1;
}

enum { N_CASES = 24 };
static const int k_lens[N_CASES] = {2,  3, 5,  11, 30, 64, 7, 13, 26, 47, 9,  33,
                                    64, 2, 18, 40, 11, 30, 3, 57, 21, 8,  44, 16};

typedef struct {
  at_session *s;
  int first; /* this thread runs cases first, first+2, first+4, ... */
  float got[N_CASES][2];
  int failed;
} arena_job;

static void *arena_worker(void *arg) {
  arena_job *j = arg;
  for (int rep = 0; rep < 20; rep++)
    for (int k = j->first; k < N_CASES; k += 2)
      if (run_logits(j->s, k_lens[k], k, j->got[k]) != 0) j->failed = 1;
  return NULL;
}

static void test_arena_off_same_answers(void **state) {
  (void)state;
  const char *model = test_source("models/sentiment-large/onnx/model_quantized.onnx");
  at_session_params on = at_session_default_params(), off = on;
  assert_true(on.cpu_mem_arena); /* the library's default is ORT's own */
  off.cpu_mem_arena = false;
  at_session *a = NULL, *b = NULL;
  assert_int_equal(at_session_create(model, &on, &a), AT_OK);
  assert_int_equal(at_session_create(model, &off, &b), AT_OK);
  float ref[N_CASES][2];
  for (int k = 0; k < N_CASES; k++) {
    float got[2];
    assert_int_equal(run_logits(a, k_lens[k], k, ref[k]), 0);
    assert_int_equal(run_logits(b, k_lens[k], k, got), 0);
    assert_memory_equal(got, ref[k], sizeof got);
  }
  /* two threads on the arena-less session at once, against the serial answers */
  arena_job j[2] = {{.s = b, .first = 0}, {.s = b, .first = 1}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, arena_worker, &j[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    assert_false(j[i].failed);
    for (int k = i; k < N_CASES; k += 2) assert_memory_equal(j[i].got[k], ref[k], sizeof ref[k]);
  }
  at_session_destroy(a);
  at_session_destroy(b);
}

/* at_session_run_into: ONNX Runtime writes an output into the caller's
 * memory (the view points there, the values are the computed ones), into
 * the input's own memory too (a decoder's shared past/present), and the
 * live-value count comes back to where it was. */
static void test_run_into(void **state) {
  (void)state;
  long v0, vn;
  at_runtime_live_objects(NULL, &v0);
  at_session *s = NULL;
  assert_int_equal(at_session_create(test_data("models/fixed_scale.onnx"), NULL, &s), AT_OK);
  float x[6] = {0, 1, -2, 3.5f, 1e3f, -0.25f}, y[6] = {0};
  at_tensor in = {.name = "x", .dtype = AT_DTYPE_FLOAT32, .ndim = 2, .shape = {2, 3}, .data = x};
  at_tensor into = {.dtype = AT_DTYPE_FLOAT32, .ndim = 2, .shape = {2, 3}, .data = y};
  at_outputs *o = NULL;
  assert_int_equal(at_session_run_into(s, &in, 1, NULL, 0, &into, &o), AT_OK);
  at_tensor v;
  assert_int_equal(at_outputs_get(o, 0, &v), AT_OK);
  assert_ptr_equal(v.data, y);
  for (int i = 0; i < 6; i++) assert_true(y[i] == 2 * x[i] + 1);
  at_outputs_free(o);
  float keep[6];
  memcpy(keep, x, sizeof keep);
  into.data = x; /* in place */
  assert_int_equal(at_session_run_into(s, &in, 1, NULL, 0, &into, &o), AT_OK);
  for (int i = 0; i < 6; i++) assert_true(x[i] == 2 * keep[i] + 1);
  at_outputs_free(o);
  into.data = y;
  into.shape[1] = 4; /* memory of the wrong shape: refused by ONNX Runtime, nothing leaks */
  float big[8];
  into.data = big;
  assert_int_not_equal(at_session_run_into(s, &in, 1, NULL, 0, &into, &o), AT_OK);
  assert_null(o);
  at_session_destroy(s);
  at_runtime_live_objects(NULL, &vn);
  assert_int_equal(vn, v0);
}

static void test_live_objects(void **state) {
  (void)state;
  long s0, v0, sn, vn;
  at_runtime_live_objects(&s0, &v0);
  at_session *s = NULL;
  assert_int_equal(at_session_create(test_data("models/fixed_scale.onnx"), NULL, &s), AT_OK);
  at_runtime_live_objects(&sn, &vn);
  assert_int_equal(sn, s0 + 1);
  assert_int_equal(vn, v0);
  float x[6] = {0};
  at_tensor in = {.name = "x", .dtype = AT_DTYPE_FLOAT32, .ndim = 2, .shape = {2, 3}, .data = x};
  at_outputs *o = NULL;
  assert_int_equal(at_session_run(s, &in, 1, NULL, 0, &o), AT_OK);
  at_runtime_live_objects(NULL, &vn);
  assert_int_equal(vn, v0 + 1); /* the output; the input was released */
  at_outputs_free(o);
  at_runtime_live_objects(NULL, &vn);
  assert_int_equal(vn, v0);
  in.shape[1] = 4; /* a Run that fails */
  assert_int_equal(at_session_run(s, &in, 1, NULL, 0, &o), AT_ERR_SHAPE);
  at_runtime_live_objects(NULL, &vn);
  assert_int_equal(vn, v0);
  at_session_destroy(s);
  at_runtime_live_objects(&sn, &vn);
  assert_int_equal(sn, s0);
  assert_int_equal(vn, v0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_signature),        cmocka_unit_test(test_known_answer_and_errors),
      cmocka_unit_test(test_output_selection), cmocka_unit_test(test_bad_model_files),
      cmocka_unit_test(test_live_objects),     cmocka_unit_test(test_arena_off_same_answers),
      cmocka_unit_test(test_run_into),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
