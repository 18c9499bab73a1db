/* tests/unit/test_model_cache.c — the compiled-artifact cache: SHA-256
 * against the FIPS 180-4 vectors; the key changes with each ingredient (model
 * bytes, ORT release, optimisation level, provider, CPU features) and a load
 * after any change misses; concurrent first loads from several processes and
 * threads all succeed and leave one valid entry and no temporary files; a
 * truncated, bit-flipped or unreadable artifact is detected, logged,
 * discarded and rebuilt; outputs from the cached artifact are bitwise
 * identical to the uncached model's (the test models, plus every ONNX file
 * under models/ when the project's models are present), and a hit maps the
 * artifact (identical outputs to a plain load of the same model.ort); a hit
 * on an unchanged artifact is checked by its stat memo, and a rewritten one
 * is still caught; an unusable cache
 * directory degrades to a plain load with a warning. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "anytime/anytime.h"
#include "anytime/model.h"
#include "model/model_internal.h"
#include "model/sha256.h"
#include "ort/session_plain.h"
#include "testutil.h"

static char g_tmp[256];

/* ---- log capture ---------------------------------------------------------- */

static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_log[16384];

static void sink(void *user, at_log_level level, const char *component, const char *msg) {
  (void)user;
  pthread_mutex_lock(&g_log_lock);
  size_t n = strlen(g_log);
  snprintf(g_log + n, sizeof g_log - n, "%s [%s] %s\n", at_log_level_name(level), component, msg);
  pthread_mutex_unlock(&g_log_lock);
}

static void log_reset(void) {
  pthread_mutex_lock(&g_log_lock);
  g_log[0] = 0;
  pthread_mutex_unlock(&g_log_lock);
}

static int setup(void **state) {
  (void)state;
  snprintf(g_tmp, sizeof g_tmp, "/tmp/anytime-cache-XXXXXX");
  if (!mkdtemp(g_tmp)) return -1;
  at_log_set_sink(sink, NULL, AT_LOG_INFO);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  return system(cmd) == 0 ? 0 : -1;
}

static void cache_dir(const char *name, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%s/artifacts", g_tmp, name);
}

/* ---- running a model on made-up inputs ----------------------------------- */

/* Run `s` on deterministic inputs shaped from its signature (dynamic dims:
 * batch 2, otherwise 7; a decoder's past_key_values get an empty past, so
 * its attention_mask of 7 matches 0 past + 7 new positions) and return every
 * output's bytes concatenated. */
static unsigned char *run_all(at_session *s, size_t *len) {
  const at_model_info *mi = at_session_info(s);
  at_tensor in[32];
  void *bufs[32] = {0};
  assert_true(mi->n_inputs <= 32);
  for (size_t i = 0; i < mi->n_inputs; i++) {
    const at_value_info *v = &mi->inputs[i];
    in[i] = (at_tensor){.name = v->name, .dtype = v->dtype, .ndim = v->ndim};
    size_t n = 1;
    for (size_t d = 0; d < v->ndim; d++) {
      bool past = strncmp(v->name, "past_key_values", 15) == 0 && d == 2;
      in[i].shape[d] = v->dims[d] >= 0 ? v->dims[d] : (d == 0 ? 2 : past ? 0 : 7);
      n *= (size_t)in[i].shape[d];
    }
    bufs[i] = calloc(n ? n : 1, 8);
    for (size_t k = 0; k < n; k++) {
      if (v->dtype == AT_DTYPE_INT64)
        ((int64_t *)bufs[i])[k] = strstr(v->name, "mask") ? 1 : strstr(v->name, "type") ? 0 : (int64_t)(1 + (k * 7) % 90);
      else if (v->dtype == AT_DTYPE_INT32)
        ((int32_t *)bufs[i])[k] = strstr(v->name, "mask") ? 1 : (int32_t)(1 + (k * 7) % 90);
      else if (v->dtype == AT_DTYPE_FLOAT32)
        ((float *)bufs[i])[k] = (float)((int)(k % 13) - 6) * 0.37f;
      else
        fail_msg("input %s has a type this test does not fill", v->name);
    }
    in[i].data = bufs[i];
  }
  at_outputs *o = NULL;
  if (at_session_run(s, in, mi->n_inputs, NULL, 0, &o) != AT_OK) fail_msg("run: %s", at_last_error());
  unsigned char *all = NULL;
  *len = 0;
  for (size_t i = 0; i < at_outputs_count(o); i++) {
    at_tensor t;
    assert_int_equal(at_outputs_get(o, i, &t), AT_OK);
    size_t b = at_tensor_numel(&t, NULL) * at_dtype_size(t.dtype);
    all = realloc(all, *len + b + 1);
    memcpy(all + *len, t.data, b);
    *len += b;
  }
  at_outputs_free(o);
  for (size_t i = 0; i < mi->n_inputs; i++) free(bufs[i]);
  return all;
}

static at_session *load(const char *model, const char *dir, at_opt_level lvl,
                        at_artifact_outcome expect) {
  at_session_params p = at_session_default_params();
  p.opt_level = lvl;
  p.artifact_cache_dir = dir;
  p.artifact_model = "test/model";
  p.artifact_variant = "fp32";
  at_session *s = NULL;
  if (at_session_create(model, &p, &s) != AT_OK) fail_msg("load %s: %s", model, at_last_error());
  if (dir && at_session_artifact_outcome(s) != expect)
    fail_msg("%s: outcome %d, expected %d; log:\n%s", model, at_session_artifact_outcome(s),
             expect, g_log);
  return s;
}

static size_t count_entries(const char *dir, int *tmp_left) {
  at_artifact_entry *v = NULL;
  size_t n = 0;
  assert_int_equal(at_artifact_cache_list(dir, &v, &n), AT_OK);
  for (size_t i = 0; i < n; i++) assert_true(v[i].valid);
  free(v);
  *tmp_left = 0;
  DIR *dp = opendir(dir);
  struct dirent *de;
  while (dp && (de = readdir(dp)))
    if (strncmp(de->d_name, ".tmp-", 5) == 0 || strncmp(de->d_name, ".trash-", 7) == 0)
      (*tmp_left)++;
  if (dp) closedir(dp);
  return n;
}

/* ---- tests ------------------------------------------------------------------ */

/* First, before this process has loaded ONNX Runtime: several processes load
 * the same model into one empty cache at the same moment. */
static void test_concurrent_processes(void **state) {
  (void)state;
  char dir[512], model[4096];
  cache_dir("procs", dir, sizeof dir);
  snprintf(model, sizeof model, "%s", test_data("models/tiny_encoder.onnx"));
  int gate[2];
  assert_int_equal(pipe(gate), 0);
  enum { N = 4 };
  pid_t kids[N];
  for (int i = 0; i < N; i++) {
    kids[i] = fork();
    assert_true(kids[i] >= 0);
    if (kids[i] == 0) {
      close(gate[1]);
      char c;
      if (read(gate[0], &c, 1) < 0) _exit(3); /* all start when the gate opens */
      at_session_params p = at_session_default_params();
      p.artifact_cache_dir = dir;
      at_session *s = NULL;
      if (at_session_create(model, &p, &s) != AT_OK) _exit(1);
      at_artifact_outcome oc = at_session_artifact_outcome(s);
      at_session_destroy(s);
      _exit(oc == AT_ARTIFACT_HIT || oc == AT_ARTIFACT_BUILT ? 0 : 2);
    }
  }
  close(gate[0]);
  close(gate[1]); /* EOF releases every child at once */
  for (int i = 0; i < N; i++) {
    int st = 0;
    assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
  }
  int tmp_left = 0;
  assert_int_equal(count_entries(dir, &tmp_left), 1);
  assert_int_equal(tmp_left, 0);
}

static void test_sha256_vectors(void **state) {
  (void)state;
  static const struct {
    const char *msg;
    const char *hex;
  } v[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrl"
       "mnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
  };
  uint8_t d[32];
  char hex[65];
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    at_sha256_once(v[i].msg, strlen(v[i].msg), d);
    at_sha256_hex(d, hex);
    assert_string_equal(hex, v[i].hex);
  }
  /* one million 'a', fed in uneven pieces */
  char *a = malloc(1000000);
  memset(a, 'a', 1000000);
  at_sha256_ctx c;
  at_sha256_init(&c);
  size_t off = 0, step = 1;
  while (off < 1000000) {
    size_t k = step < 1000000 - off ? step : 1000000 - off;
    at_sha256_update(&c, a + off, k);
    off += k;
    step = step * 3 % 1021 + 1;
  }
  at_sha256_final(&c, d);
  at_sha256_hex(d, hex);
  assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(a);
  /* a file */
  char path[300];
  snprintf(path, sizeof path, "%s/abc.txt", g_tmp);
  FILE *f = fopen(path, "w");
  fputs("abc", f);
  fclose(f);
  uint64_t size = 0;
  assert_int_equal(at_sha256_file(path, d, &size), AT_OK);
  assert_int_equal(size, 3);
  at_sha256_hex(d, hex);
  assert_string_equal(hex, v[1].hex);
  assert_int_equal(at_sha256_file("/nonexistent", d, NULL), AT_ERR_NOT_FOUND);
}

static void test_key_ingredients(void **state) {
  (void)state;
  at_artifact_ingredients base = {.ort_release = "1.29.0", .opt_level = "all",
                                  .provider = "CPUExecutionProvider",
                                  .cpu_features = "x86_64 avx avx2"};
  snprintf(base.model_sha256, sizeof base.model_sha256, "%064d", 0);
  char k0[65], k[65];
  at_artifact_key(&base, k0);
  at_artifact_key(&base, k);
  assert_string_equal(k0, k); /* deterministic */
  at_artifact_ingredients x = base;
  x.model_sha256[63] = '1';
  at_artifact_key(&x, k);
  assert_string_not_equal(k0, k);
  x = base;
  x.ort_release = "1.29.1";
  at_artifact_key(&x, k);
  assert_string_not_equal(k0, k);
  x = base;
  x.opt_level = "extended";
  at_artifact_key(&x, k);
  assert_string_not_equal(k0, k);
  x = base;
  x.provider = "CUDAExecutionProvider";
  at_artifact_key(&x, k);
  assert_string_not_equal(k0, k);
  x = base;
  x.cpu_features = "x86_64 avx avx2 avx512f";
  at_artifact_key(&x, k);
  assert_string_not_equal(k0, k);
  /* the real CPU string names the machine and, on x86, its vector units */
  const char *cpu = at_artifact_cpu_features();
  assert_non_null(cpu);
#if defined(__x86_64__)
  assert_non_null(strstr(cpu, "x86_64"));
  assert_non_null(strstr(cpu, "sse4_2"));
#endif
}

/* Every ingredient change misses, on real loads. */
static void test_each_ingredient_misses(void **state) {
  (void)state;
  char dir[512], model[600], cmd[9000];
  cache_dir("keys", dir, sizeof dir);
  snprintf(model, sizeof model, "%s/model.onnx", g_tmp);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", test_data("models/tiny_encoder.onnx"), model);
  assert_int_equal(system(cmd), 0);
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT));
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_HIT));
  at_session_destroy(load(model, dir, AT_OPT_EXTENDED, AT_ARTIFACT_BUILT)); /* opt level */
  at_session_destroy(load(model, dir, AT_OPT_EXTENDED, AT_ARTIFACT_HIT));
  at_artifact_test_override("0.0.0-test", NULL); /* ORT release */
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT));
  at_artifact_test_override(NULL, "x86_64 pretend-cpu"); /* CPU features */
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT));
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_HIT));
  at_artifact_test_override(NULL, NULL);
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_HIT)); /* back to the first */
  /* same path, different bytes: a new key, and the old artifact is not used */
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", test_data("models/fixed_scale.onnx"), model);
  assert_int_equal(system(cmd), 0);
  at_session *s = load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT);
  assert_string_equal(at_session_info(s)->inputs[0].name, "x");
  at_session_destroy(s);
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_HIT));
  int tmp_left = 0;
  assert_int_equal(count_entries(dir, &tmp_left), 5);
  assert_int_equal(tmp_left, 0);
  /* the sidecar records what was asked */
  at_artifact_entry *v = NULL;
  size_t n = 0;
  assert_int_equal(at_artifact_cache_list(dir, &v, &n), AT_OK);
  assert_string_equal(v[0].model, "test/model");
  assert_string_equal(v[0].variant, "fp32");
  assert_string_equal(v[0].provider, "CPUExecutionProvider");
  assert_true(v[0].size_bytes > 0);
  assert_non_null(strstr(v[0].model_path, "/model.onnx"));
  free(v);
}

/* Where the stat memo of `path` lives under the cache `dir`. */
static void memo_file(const char *dir, const char *path, char *out, size_t cap) {
  char real[4096], hex[65];
  uint8_t d[32];
  assert_non_null(realpath(path, real));
  at_sha256_once(real, strlen(real), d);
  at_sha256_hex(d, hex);
  snprintf(out, cap, "%s/.hashes/%s", dir, hex);
}

/* The model-hash memo: used for an unchanged file, never for a changed one. */
static void test_hash_memo(void **state) {
  (void)state;
  char dir[512], model[600], cmd[9000], memo_dir[600], memo[1200];
  cache_dir("memo", dir, sizeof dir);
  snprintf(memo_dir, sizeof memo_dir, "%s/.hashes", dir);
  snprintf(model, sizeof model, "%s/memo.onnx", g_tmp);
  /* an mtime over a second ahead keeps the file "racy" for the first load,
   * however slow this host is (date +%s rounds down) */
  snprintf(cmd, sizeof cmd, "cp '%s' '%s' && touch -d \"@$(( $(date +%%s) + 2 ))\" '%s'",
           test_data("models/tiny_encoder.onnx"), model, model);
  assert_int_equal(system(cmd), 0);
  memo_file(dir, model, memo, sizeof memo);
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT));
  struct stat st;
  assert_int_not_equal(stat(memo, &st), 0); /* too new: "racy", not remembered */
  sleep(5); /* now over 3 s old: past the margin of any file system */
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_HIT));
  assert_int_equal(stat(memo, &st), 0); /* remembered now */
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_HIT)); /* through the memo */
  /* rewrite in place with other bytes: ctime moves, the memo no longer applies */
  snprintf(cmd, sizeof cmd, "cat '%s' > '%s'", test_data("models/fixed_scale.onnx"), model);
  assert_int_equal(system(cmd), 0);
  at_session *s = load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT);
  assert_string_equal(at_session_info(s)->inputs[0].name, "x");
  at_session_destroy(s);
  size_t removed = 0;
  assert_int_equal(at_artifact_cache_clear(dir, &removed), AT_OK);
  assert_int_equal(removed, 2);
  assert_int_not_equal(stat(memo_dir, &st), 0);
}

/* Outputs through the cached artifact equal the plain model's, bit for bit. */
static void check_identity(const char *model, at_opt_level lvl) {
  char dir[512];
  cache_dir("identity", dir, sizeof dir);
  at_session *plain = load(model, NULL, lvl, AT_ARTIFACT_OFF);
  at_session_params p = at_session_default_params();
  p.opt_level = lvl;
  p.artifact_cache_dir = dir;
  at_session *first = NULL, *cached = NULL;
  assert_int_equal(at_session_create(model, &p, &first), AT_OK);
  assert_int_equal(at_session_create(model, &p, &cached), AT_OK);
  assert_int_equal(at_session_artifact_outcome(cached), AT_ARTIFACT_HIT);
  assert_true(at_ort_session_mapped_bytes(cached) > 0); /* a hit reads the mapped artifact */
  assert_int_equal(at_ort_session_mapped_bytes(first), 0);
  size_t n0, n1, n2;
  unsigned char *a = run_all(plain, &n0), *b = run_all(first, &n1), *c = run_all(cached, &n2);
  assert_int_equal(n0, n1);
  assert_int_equal(n0, n2);
  assert_true(n0 > 0);
  if (memcmp(a, b, n0) != 0 || memcmp(a, c, n0) != 0)
    fail_msg("%s (opt %d): cached outputs differ from the plain model's", model, (int)lvl);
  free(a);
  free(b);
  free(c);
  at_session_destroy(plain);
  at_session_destroy(first);
  at_session_destroy(cached);
}

static void test_output_identity(void **state) {
  (void)state;
  char model[4096];
  snprintf(model, sizeof model, "%s", test_data("models/tiny_encoder.onnx"));
  check_identity(model, AT_OPT_ALL);
  check_identity(model, AT_OPT_BASIC);
  snprintf(model, sizeof model, "%s", test_data("hf/tiny_embedder.onnx"));
  check_identity(model, AT_OPT_ALL);
  /* the project's own models: committed, so they must be found (this
   * check passed vacuously when the directory was missing; seen to fail
   * with ANYTIME_SOURCE_DIR pointing at an empty directory) */
  const char *src = getenv("ANYTIME_SOURCE_DIR");
  if (!src) fail_msg("ANYTIME_SOURCE_DIR is not set (ctest sets it): the project's models "
                     "cannot be found");
  char models[4096];
  snprintf(models, sizeof models, "%s/models", src);
  at_model_resolve_params rp = at_model_resolve_default_params();
  const char *dirs[] = {models};
  rp.model_dirs = dirs;
  rp.n_model_dirs = 1;
  rp.hub_cache = "/nonexistent";
  at_model_entry *v = NULL;
  size_t n = 0;
  assert_int_equal(at_model_list(&rp, &v, &n), AT_OK);
  size_t checked = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; v[i].desc && k < v[i].desc->n_variants; k++) {
      print_message("identity: %s\n", v[i].desc->variants[k].path);
      check_identity(v[i].desc->variants[k].path, AT_OPT_ALL);
      checked++;
    }
  at_model_list_free(v, n);
  /* models/: sentiment-large, sentiment-small, embedding, decoder, each
   * fp32 and int8 */
  if (checked < 8) fail_msg("only %zu of the project's 8 model files were found under %s", checked,
                            models);
}

static void entry_file(const char *dir, const char *name, char *out, size_t cap) {
  at_artifact_entry *v = NULL;
  size_t n = 0;
  assert_int_equal(at_artifact_cache_list(dir, &v, &n), AT_OK);
  assert_int_equal(n, 1);
  snprintf(out, cap, "%s/%s/%s", dir, v[0].key, name);
  free(v);
}

static void test_corruption_recovery(void **state) {
  (void)state;
  char dir[512], art[1024], meta[1024], model[4096];
  cache_dir("corrupt", dir, sizeof dir);
  snprintf(model, sizeof model, "%s", test_data("models/tiny_encoder.onnx"));
  at_session *ref = load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT);
  size_t nref;
  unsigned char *want = run_all(ref, &nref);
  at_session_destroy(ref);
  entry_file(dir, "model.ort", art, sizeof art);
  entry_file(dir, "meta.json", meta, sizeof meta);
  struct stat st;
  assert_int_equal(stat(art, &st), 0);

  for (int round = 0; round < 4; round++) {
    if (round == 0) { /* truncate */
      assert_int_equal(truncate(art, st.st_size / 2), 0);
    } else if (round == 1) { /* flip one byte in the middle, same size */
      FILE *f = fopen(art, "r+b");
      fseek(f, st.st_size / 2, SEEK_SET);
      int c = fgetc(f);
      fseek(f, st.st_size / 2, SEEK_SET);
      fputc(c ^ 0x40, f);
      fclose(f);
    } else if (round == 2) { /* garbage sidecar */
      FILE *f = fopen(meta, "w");
      fputs("{not json", f);
      fclose(f);
    } else { /* artifact gone */
      assert_int_equal(unlink(art), 0);
    }
    log_reset();
    at_session *s = load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT);
    if (!strstr(g_log, "corrupt")) fail_msg("round %d: no corruption logged:\n%s", round, g_log);
    size_t n;
    unsigned char *got = run_all(s, &n);
    assert_int_equal(n, nref);
    assert_memory_equal(got, want, n);
    free(got);
    at_session_destroy(s);
    at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_HIT)); /* rebuilt and valid */
  }
  free(want);
  int tmp_left = 0;
  assert_int_equal(count_entries(dir, &tmp_left), 1);
  assert_int_equal(tmp_left, 0);
}

/* The same model.ort opened plainly (ORT copies it) and mapped (ORT reads
 * the weights in place): identical outputs, and the mapping is the file. */
static void test_mapped_artifact(void **state) {
  (void)state;
  const char *models[] = {"models/tiny_encoder.onnx", "hf/tiny_embedder.onnx"};
  for (size_t m = 0; m < 2; m++) {
    char dir[512], art[1024], model[4096];
    snprintf(dir, sizeof dir, "%s/mapped%zu/artifacts", g_tmp, m);
    snprintf(model, sizeof model, "%s", test_data(models[m]));
    at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT));
    entry_file(dir, "model.ort", art, sizeof art);
    at_session_params p = at_session_default_params();
    at_session *plain = NULL, *mapped = NULL, *bad = NULL;
    assert_int_equal(at_ort_session_open(art, &p, &plain), AT_OK);
    assert_int_equal(at_ort_session_open_mapped(art, &p, &mapped), AT_OK);
    struct stat st;
    assert_int_equal(stat(art, &st), 0);
    assert_int_equal(at_ort_session_mapped_bytes(plain), 0);
    assert_int_equal(at_ort_session_mapped_bytes(mapped), (size_t)st.st_size);
    size_t n0, n1;
    unsigned char *a = run_all(plain, &n0), *b = run_all(mapped, &n1);
    assert_int_equal(n0, n1);
    assert_true(n0 > 0);
    assert_memory_equal(a, b, n0);
    free(a);
    free(b);
    at_session_destroy(plain);
    at_session_destroy(mapped);
    p.optimized_model_path = "/nonexistent/out.ort";
    assert_int_equal(at_ort_session_open_mapped(art, &p, &bad), AT_ERR_INVALID_ARG);
    assert_null(bad);
    p.optimized_model_path = NULL;
    assert_int_equal(at_ort_session_open_mapped("/nonexistent/model.ort", &p, &bad),
                     AT_ERR_NOT_FOUND);
  }
}

/* The artifact's own stat memo: a hit on an unchanged artifact does not
 * re-read it, and any write to it (ctime moves, even with size and mtime
 * put back) sends the check back to a full SHA-256, which catches it. */
static void test_artifact_memo(void **state) {
  (void)state;
  char dir[512], model[600], cmd[9000], art[1024], memo[1200];
  cache_dir("artmemo", dir, sizeof dir);
  snprintf(model, sizeof model, "%s/artmemo.onnx", g_tmp);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", test_data("models/tiny_encoder.onnx"), model);
  assert_int_equal(system(cmd), 0);
  at_session *ref = load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT);
  size_t nref, n;
  unsigned char *want = run_all(ref, &nref);
  at_session_destroy(ref);
  entry_file(dir, "model.ort", art, sizeof art);
  memo_file(dir, art, memo, sizeof memo);
  sleep(3); /* past the "racy" margin of any file system */
  log_reset();
  at_session_destroy(load(model, dir, AT_OPT_ALL, AT_ARTIFACT_HIT)); /* hashed, remembered */
  struct stat st;
  assert_int_equal(stat(memo, &st), 0);
  log_reset();
  at_session *s = load(model, dir, AT_OPT_ALL, AT_ARTIFACT_HIT);
  if (!strstr(g_log, "artifact checked by its stat memo"))
    fail_msg("the second hit re-hashed the artifact:\n%s", g_log);
  unsigned char *got = run_all(s, &n);
  assert_int_equal(n, nref);
  assert_memory_equal(got, want, n);
  free(got);
  at_session_destroy(s);
  /* flip one byte, then put the mtime back: only ctime tells */
  assert_int_equal(stat(art, &st), 0);
  FILE *f = fopen(art, "r+b");
  assert_non_null(f);
  fseek(f, st.st_size / 2, SEEK_SET);
  int c = fgetc(f);
  fseek(f, st.st_size / 2, SEEK_SET);
  fputc(c ^ 0x40, f);
  fclose(f);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  assert_int_equal(utimensat(AT_FDCWD, art, times, 0), 0);
  log_reset();
  s = load(model, dir, AT_OPT_ALL, AT_ARTIFACT_BUILT);
  if (!strstr(g_log, "corrupt")) fail_msg("a rewritten artifact was trusted:\n%s", g_log);
  got = run_all(s, &n);
  assert_int_equal(n, nref);
  assert_memory_equal(got, want, n);
  free(got);
  at_session_destroy(s);
  free(want);
}

static void test_unusable_dir(void **state) {
  (void)state;
  char file[512], dir[600], model[4096];
  snprintf(file, sizeof file, "%s/plainfile", g_tmp);
  FILE *f = fopen(file, "w");
  fclose(f);
  snprintf(dir, sizeof dir, "%s/artifacts", file); /* under a regular file */
  snprintf(model, sizeof model, "%s", test_data("models/tiny_encoder.onnx"));
  log_reset();
  at_session *s = load(model, dir, AT_OPT_ALL, AT_ARTIFACT_UNCACHED);
  size_t n;
  free(run_all(s, &n));
  at_session_destroy(s);
  assert_non_null(strstr(g_log, "not usable"));
  /* a missing model is still the model's error, not the cache's */
  at_session_params p = at_session_default_params();
  p.artifact_cache_dir = dir;
  assert_int_equal(at_session_create("/nonexistent.onnx", &p, &s), AT_ERR_NOT_FOUND);
}

typedef struct {
  const char *dir, *model;
  int ok;
} thread_arg;

static void *thread_load(void *a) {
  thread_arg *t = a;
  at_session_params p = at_session_default_params();
  p.artifact_cache_dir = t->dir;
  at_session *s = NULL;
  t->ok = at_session_create(t->model, &p, &s) == AT_OK;
  at_session_destroy(s);
  return NULL;
}

static void test_concurrent_threads(void **state) {
  (void)state;
  char dir[512], model[4096];
  cache_dir("threads", dir, sizeof dir);
  snprintf(model, sizeof model, "%s", test_data("hf/tiny_embedder.onnx"));
  enum { N = 6 };
  pthread_t th[N];
  thread_arg args[N];
  for (int i = 0; i < N; i++) {
    args[i] = (thread_arg){dir, model, 0};
    assert_int_equal(pthread_create(&th[i], NULL, thread_load, &args[i]), 0);
  }
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    assert_true(args[i].ok);
  }
  int tmp_left = 0;
  assert_int_equal(count_entries(dir, &tmp_left), 1);
  assert_int_equal(tmp_left, 0);
}

static void test_dir_list_clear(void **state) {
  (void)state;
  char buf[1024];
  assert_int_equal(at_artifact_cache_dir("/some/root", buf, sizeof buf), AT_OK);
  assert_string_equal(buf, "/some/root/artifacts");
  setenv("ANYTIME_CACHE_DIR", "/env/cache", 1);
  assert_int_equal(at_artifact_cache_dir(NULL, buf, sizeof buf), AT_OK);
  assert_string_equal(buf, "/env/cache/artifacts");
  unsetenv("ANYTIME_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  assert_int_equal(at_artifact_cache_dir(NULL, buf, sizeof buf), AT_OK);
  assert_string_equal(buf, "/xdg/anytime/artifacts");
  unsetenv("XDG_CACHE_HOME");
  assert_int_equal(at_artifact_cache_dir(NULL, buf, sizeof buf), AT_OK);
  assert_non_null(strstr(buf, "/.cache/anytime/artifacts"));

  char dir[512];
  cache_dir("keys", dir, sizeof dir);
  at_artifact_entry *v = NULL;
  size_t n = 0, removed = 0;
  assert_int_equal(at_artifact_cache_list(dir, &v, &n), AT_OK);
  assert_true(n >= 1);
  free(v);
  /* a foreign file in the directory is left alone */
  char other[600];
  snprintf(other, sizeof other, "%s/README", dir);
  FILE *f = fopen(other, "w");
  fclose(f);
  assert_int_equal(at_artifact_cache_clear(dir, &removed), AT_OK);
  assert_int_equal(removed, n);
  assert_int_equal(at_artifact_cache_list(dir, &v, &n), AT_OK);
  assert_int_equal(n, 0);
  free(v);
  assert_int_equal(access(other, F_OK), 0);
  assert_int_equal(at_artifact_cache_list("/nonexistent/dir", &v, &n), AT_OK);
  assert_int_equal(n, 0);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concurrent_processes), /* first: before ORT is loaded here */
      cmocka_unit_test(test_sha256_vectors),
      cmocka_unit_test(test_key_ingredients),
      cmocka_unit_test(test_each_ingredient_misses),
      cmocka_unit_test(test_hash_memo),
      cmocka_unit_test(test_output_identity),
      cmocka_unit_test(test_corruption_recovery),
      cmocka_unit_test(test_artifact_memo),
      cmocka_unit_test(test_mapped_artifact),
      cmocka_unit_test(test_unusable_dir),
      cmocka_unit_test(test_concurrent_threads),
      cmocka_unit_test(test_dir_list_clear),
  };
  if (argc > 1) cmocka_set_test_filter(argv[1]); /* e.g. the portable-SHA run */
  return cmocka_run_group_tests(tests, setup, teardown);
}
