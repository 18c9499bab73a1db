/* src/tools/profile_write.c — what the profile pipeline writes
 * (tools/profile_impl.h): per model the accuracy/cost Pareto frontier
 * (variants off it are recorded as dominated and left out of the planner's
 * configuration), the batch size the most accurate frontier variant
 * prefers, the figures written into the configuration and each variant's
 * JSON record; at the end configs/serving.yaml (the planner's inputs,
 * through the library's one configuration writer) and
 * results/variant_profiles.json (every raw figure), each written atomically
 * (prof_write_file_atomic). Also the growing text buffer the configuration
 * and the check tables are built in. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anytime/anytime.h"
#include "anytime/server.h"
#include "tools/profile_impl.h"
#include "tools/profile_run.h"

void prof_buf_printf(prof_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || b->oom) {
    b->oom = true;
    return;
  }
  size_t need = b->len + (size_t)n + 1;
  if (need > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) cap *= 2;
    char *ns = realloc(b->s, cap);
    if (!ns) {
      b->oom = true;
      return;
    }
    b->s = ns, b->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void prof_buf_free(prof_buf *b) {
  free(b->s);
  *b = (prof_buf){0};
}

/* `path` relative to `dir` when it lies under it, else absolute. */
static void rel_path(char *dst, size_t cap, const char *path, const char *dir) {
  size_t dl = strlen(dir);
  if (!strncmp(path, dir, dl) && path[dl] == '/')
    snprintf(dst, cap, "%s", path + dl + 1);
  else {
    char rp[PATH_MAX];
    snprintf(dst, cap, "%s", realpath(path, rp) ? rp : path);
  }
}

int prof_write_file_atomic(const char *path, const char *data, size_t len) {
  char tmp[PATH_MAX], d[PATH_MAX];
  snprintf(d, sizeof d, "%s", path);
  mkdir(dirname(d), 0755);
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return -1;
  bool ok = fwrite(data, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    errno = e;
    return -1;
  }
  return 0;
}

/* The model's frontier, the batch size its most accurate frontier variant
 * prefers (into P->best_b), its YAML section and its JSON record. */
void prof_emit_model(prof_state *P, prof_model *M) {
  at_server_model_config *mc = M->mc;
  prof_variant *vr = M->vr;
  int repeats = P->o->repeats;
  /* frontier over (accuracy, cost = s(1) relative to the most accurate) */
  double acc[AT_SERVER_MAX_VARIANTS], cost[AT_SERVER_MAX_VARIANTS], best_acc = -1, ref_cost = 1;
  for (int v = 0; v < mc->n_variants; v++)
    if (vr[v].accuracy > best_acc) best_acc = vr[v].accuracy, ref_cost = vr[v].service_s[0];
  bool on[AT_SERVER_MAX_VARIANTS];
  for (int v = 0; v < mc->n_variants; v++) {
    acc[v] = vr[v].accuracy;
    cost[v] = vr[v].cost = vr[v].service_s[0] / ref_cost;
  }
  at_plan_frontier(acc, cost, (size_t)mc->n_variants, on);
  int top = 0;
  for (int v = 1; v < mc->n_variants; v++)
    if (on[v] && (!on[top] || vr[v].accuracy > vr[top].accuracy)) top = v;
  int bb = 1;
  double best_rate = 0;
  for (int bi = 0; bi < vr[top].n_b; bi++)
    if (vr[top].batch[bi] / vr[top].service_s[bi] > best_rate)
      best_rate = vr[top].batch[bi] / vr[top].service_s[bi], bb = vr[top].batch[bi];
  if (bb < P->best_b) P->best_b = bb;

  /* the figures go into the configuration (at_server_config_models_yaml
   * writes it), rounded as they are worth: accuracy and cost to 1e-4 */
  json_t *jv = json_array();
  size_t mi = (size_t)(mc - P->cfg.models);
  for (int v = 0; v < mc->n_variants; v++) {
    prof_variant *x = &vr[v];
    at_server_variant_config *vc = &mc->variants[v];
    x->frontier = P->offered[mi * AT_SERVER_MAX_VARIANTS + (size_t)v] = on[v];
    snprintf(vc->path, sizeof vc->path, "%s", x->path);
    vc->accuracy = round(x->accuracy * 1e4) / 1e4;
    vc->cost = round(x->cost * 1e4) / 1e4;
    vc->n_points = vc->n_busy_points = 0;
    if (x->n_lb) /* measured now; else what the family file had carries over */
      vc->len_ref_tokens = x->len_ref, vc->len_cost_per_token = x->len_cost;
    for (int bi = 0; bi < x->n_b; bi++) {
      vc->batch[vc->n_points] = x->batch[bi];
      vc->service_s[vc->n_points++] = x->service_s[bi];
      if (x->busy_s[bi] > 0 && vc->n_busy_points == bi) { /* the leading run of busy figures */
        vc->busy_batch[vc->n_busy_points] = x->batch[bi];
        vc->busy_s[vc->n_busy_points++] = x->busy_s[bi];
      }
    }
    char rp2[PATH_MAX];
    rel_path(rp2, sizeof rp2, x->path, P->famdir);
    json_t *jb = json_array();
    for (int bi = 0; bi < x->n_b; bi++) {
      json_t *passes = json_array();
      for (int p = 0; p < repeats; p++)
        json_array_append_new(passes, json_real(x->pass_medians[bi][p] * 1e3));
      json_t *row = json_pack("{s:i, s:f, s:f, s:o}", "batch", x->batch[bi], "service_time_ms",
                              x->service_s[bi] * 1e3, "service_time_spread_pct", x->spread_pct[bi],
                              "pass_medians_ms", passes);
      if (x->busy_s[bi] > 0) {
        json_t *bp = json_array();
        for (int p = 0; p < repeats; p++)
          json_array_append_new(bp, json_real(x->busy_pass_medians[bi][p] * 1e3));
        json_object_set_new(row, "busy_service_time_ms", json_real(x->busy_s[bi] * 1e3));
        json_object_set_new(row, "busy_service_time_spread_pct", json_real(x->busy_spread_pct[bi]));
        json_object_set_new(row, "busy_pass_medians_ms", bp);
      }
      json_array_append_new(jb, row);
    }
    json_t *rpasses = json_array();
    for (int p = 0; p < repeats; p++)
      json_array_append_new(rpasses, json_real(x->ref_passes[p] * 1e3));
    json_t *jx =
        json_pack("{s:s, s:s, s:f, s:s, s:f, s:f, s:b, s:o, s:{s:f, s:o, s:f, s:I, s:f, s:f}}",
                  "name", x->name, "path", rp2, "accuracy", x->accuracy, "accuracy_metric",
                  M->task ? "5nn_label_agreement" : "argmax_accuracy", "cost", x->cost,
                  "service_time_ms", x->service_s[0] * 1e3, "on_frontier", (int)on[v], "by_batch",
                  jb, "reference", "service_time_ms", x->ref_s1 * 1e3, "pass_medians_ms", rpasses,
                  "service_time_difference_pct", x->agree_pct, "prediction_disagreements",
                  (json_int_t)x->pred_disagreements, "max_abs_output_diff", x->max_abs_diff,
                  "min_cosine", x->min_cosine);
    json_object_set_new(jx, "len_ref_tokens", json_real(vc->len_ref_tokens));
    json_object_set_new(jx, "len_cost_per_token", json_real(vc->len_cost_per_token));
    if (x->n_lb) {
      json_object_set_new(jx, "by_length", prof_length_buckets_json(x, repeats));
      json_object_set_new(jx, "length_model", prof_length_model_json(x));
      prof_length_check(&P->checks, mc->name, x);
    }
    json_array_append_new(jv, jx);
  }
  json_array_append_new(
      P->jmodels, json_pack("{s:s, s:s, s:I, s:o}", "name", mc->name, "task", mc->task, "texts",
                            (json_int_t)P->ds->n, "variants", jv));
}

/* This host's CPU, for the record. */
static void host_cpu(char *cpu, size_t cap) {
  snprintf(cpu, cap, "unknown");
  FILE *ci = fopen("/proc/cpuinfo", "r");
  if (!ci) return;
  char line[512];
  while (fgets(line, sizeof line, ci))
    if (!strncmp(line, "model name", 10)) {
      char *c = strchr(line, ':');
      if (c) snprintf(cpu, cap, "%s", c + 2);
      cpu[strcspn(cpu, "\n")] = '\0';
      break;
    }
  fclose(ci);
}

/* The configuration's text: a header, the settings of the family file with
 * the batch size and deadline this profile chose, the models with their
 * figures, the generation lane's section carried over. Fills *out; false
 * when out of memory. */
static bool config_yaml(prof_state *P, prof_buf *out) {
  /* every setting of the family file carries over (one writer: config.c),
   * with the batch size and deadline this profile chose */
  at_server_config wcfg = P->cfg;
  wcfg.deadline_ms = P->deadline_ms;
  if (wcfg.max_deadline_ms < P->deadline_ms) wcfg.max_deadline_ms = P->deadline_ms;
  char *settings = at_server_config_settings_yaml(&wcfg, P->best_b);
  if (!settings) return false;
  char *models = at_server_config_models_yaml(&P->cfg, P->famdir, P->offered);
  if (!models) {
    free(settings);
    return false;
  }
  prof_buf_printf(
      out,
      "# Written by `%s` on %s\n# (ONNX Runtime %s). Service times are medians of %d passes "
      "through\n"
      "# the serving path; results/variant_profiles.json has every raw figure.\n"
      "# batching.max_batch_size: the batch size with the most texts per second for the\n"
      "# most accurate variant(s) on this host (b / s(b) from the tables below).\n%s",
      P->cmdline, P->now, P->vi.library_release, P->o->repeats, settings);
  free(settings);
  prof_buf_printf(out, "%s", models);
  free(models);
  /* the generation lane is not profiled here: carry its section over */
  char *gen_yaml = at_server_config_generator_yaml(&P->cfg);
  if (!gen_yaml) return false;
  prof_buf_printf(out, "%s", gen_yaml);
  free(gen_yaml);
  return !out->oom;
}

int prof_write_outputs(prof_state *P) {
  const prof_options *o = P->o;
  char cpu[256];
  host_cpu(cpu, sizeof cpu);
  json_t *batches = json_array();
  for (int k = 0; k < o->n_bs; k++) json_array_append_new(batches, json_integer(o->bs[k]));
  json_t *root =
      json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:o, s:f, s:s, s:O}", "command",
                P->cmdline, "date", P->now, "anytime", AT_VERSION_STRING, "ort_version",
                P->vi.library_release, "host_cpu", cpu, "cpus", (int)sysconf(_SC_NPROCESSORS_ONLN),
                "workers", P->cfg.workers, "intra_op_threads", P->cfg.intra_op_threads, "repeats",
                o->repeats, "iters", o->iters, "batch_sizes", batches, "agreement_tolerance",
                o->tol, "data", o->data, "models", P->jmodels);
  if (P->best_b == 256) P->best_b = P->cfg.max_batch_size;
  prof_buf out = {0};
  if (!config_yaml(P, &out)) {
    prof_buf_free(&out);
    json_decref(root);
    fprintf(stderr, "anytime profile: out of memory writing the configuration\n");
    return AT_EXIT_FAIL;
  }
  char *js = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
  json_decref(root);
  int w1 = js ? prof_write_file_atomic(o->out_json, js, strlen(js)) : -1;
  int w2 = prof_write_file_atomic(o->out_cfg, out.s, out.len);
  prof_buf_free(&out);
  free(js);
  if (w1 || w2) {
    fprintf(stderr, "anytime profile: cannot write %s or %s: %s\n", o->out_json, o->out_cfg,
            strerror(errno));
    return AT_EXIT_FAIL;
  }
  fprintf(stderr, "profile: wrote %s and %s\n", o->out_cfg, o->out_json);
  return AT_EXIT_OK;
}
