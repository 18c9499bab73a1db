/* src/tools/sweep_config.c — a sweep's configuration: making and freeing a
 * sweep from its parameters and the loaded configuration, finding the
 * classify model's most accurate and cheapest frontier variants (as the
 * server does), and the one writer of "the configuration with only one
 * variant" — the server the sweep's cheap-only policy and its capacity
 * measurements run on, and, through `anytime sweep --write-cheap-config`,
 * the cheap.yaml of the bench scripts (bench/lib.sh). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anytime/plan.h"
#include "tools/sweep_internal.h"

const char *const sweep_client_names[MAX_CM] = {"poisson", "closed-retry"};
const char *const sweep_policy_names[MAX_POL] = {"adaptive", "accurate-only", "none", "limit",
                                                 "cheap-only"};

void sweep_default_params(sweep_params *p) {
  memset(p, 0, sizeof *p);
  p->cfg_path = "configs/serving.yaml", p->out_csv = "results/load_sweep.csv";
  p->out_md = "results/load_sweep.md", p->plot = "docs/img/load_sweep.png", p->basis = "offered";
  p->deadline = -1, p->capacity = -1, p->cheap_capacity = -1, p->seed = 1, p->think_ms = 50;
  p->inflight_limit = 512, p->n_pol = MAX_POL, p->n_cm = MAX_CM;
  p->adj_from = 1.0;
  for (int i = 0; i < MAX_POL; i++) p->pol[i] = i;
  for (int i = 0; i < MAX_CM; i++) p->cms[i] = i;
}

double sweep_s1(const at_server_variant_config *vc) {
  return vc->n_points > 0 && vc->batch[0] == 1 ? vc->service_s[0] : 0;
}

/* The classify model of `cfg`, its most accurate variant and its cheapest
 * frontier variant (anytime/plan.h's frontier on accuracy and cost, cost =
 * the configured one or s(1), as the server does). Returns the model's
 * index, or -1 with a message on stderr. */
static int pick_variants(const at_server_config *cfg, const char *cfg_path, int *acc_v,
                         int *cheap_v, double *best_acc) {
  int mi = -1;
  for (int m = 0; m < cfg->n_models && mi < 0; m++)
    if (!strcmp(cfg->models[m].task, "classify")) mi = m;
  if (mi < 0) return fprintf(stderr, "anytime sweep: %s has no classify model\n", cfg_path), -1;
  const at_server_model_config *mc = &cfg->models[mi];
  int n = mc->n_variants;
  double acc[AT_SERVER_MAX_VARIANTS] = {0}, cost[AT_SERVER_MAX_VARIANTS] = {0};
  bool front[AT_SERVER_MAX_VARIANTS];
  for (int v = 0; v < n; v++) {
    const at_server_variant_config *vc = &mc->variants[v];
    acc[v] = vc->accuracy;
    cost[v] = vc->cost > 0 ? vc->cost : (sweep_s1(vc) > 0 ? sweep_s1(vc) : 1);
  }
  at_plan_frontier(acc, cost, (size_t)n, front);
  *best_acc = -1;
  *acc_v = *cheap_v = -1;
  for (int v = 0; v < n; v++) {
    if (!front[v]) continue;
    if (acc[v] > *best_acc || (acc[v] == *best_acc && cost[v] < cost[*acc_v]))
      *best_acc = acc[v], *acc_v = v;
    if (*cheap_v < 0 || cost[v] < cost[*cheap_v]) *cheap_v = v;
  }
  if (*acc_v < 0) return fprintf(stderr, "anytime sweep: no frontier variant\n"), -1;
  return mi;
}

int sweep_create(const sweep_params *p, const char *self_exe, const at_server_config *cfg,
                 sweep **out) {
  *out = NULL;
  sweep *sw = calloc(1, sizeof *sw); /* ~1.5 MB: every point's figures */
  if (!sw) return fprintf(stderr, "anytime sweep: out of memory\n"), -1;
  sw->cfg_path = p->cfg_path, sw->out_csv = p->out_csv, sw->out_md = p->out_md;
  sw->plot = p->plot, sw->data_path = p->data_path, sw->basis = p->basis;
  sw->from_csv = p->from_csv, sw->server_cpus = p->server_cpus;
  memcpy(sw->rhos, p->rhos, sizeof sw->rhos);
  sw->n_rho = p->n_rho, sw->duration = p->duration, sw->deadline = p->deadline;
  sw->capacity = p->capacity, sw->cheap_capacity = p->cheap_capacity;
  sw->think_ms = p->think_ms, sw->adj_from = p->adj_from;
  sw->repeats = p->repeats, sw->seed = p->seed, sw->inflight_limit = p->inflight_limit;
  sw->capacity_from_profile = p->capacity_from_profile;
  memcpy(sw->pol, p->pol, sizeof sw->pol), sw->n_pol = p->n_pol;
  memcpy(sw->cms, p->cms, sizeof sw->cms), sw->n_cm = p->n_cm;
  sw->cheap_lg_cores = NAN;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  sw->ncpu = ncpu > 0 ? (int)ncpu : 1;
  snprintf(sw->self, sizeof sw->self, "%s", self_exe);
  sw->cfg = *cfg;
  if (sw->deadline <= 0) sw->deadline = sw->cfg.deadline_ms;
  int mi = pick_variants(&sw->cfg, sw->cfg_path, &sw->acc_v, &sw->cheap_v, &sw->best_acc);
  if (mi < 0) return free(sw), -1;
  sw->mc = &sw->cfg.models[mi];
  sw->acc_cost = sw->mc->variants[sw->acc_v].cost > 0 ? sw->mc->variants[sw->acc_v].cost : 1;
  *out = sw;
  return 0;
}

int sweep_make_tmpdir(sweep *sw) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  int n = snprintf(sw->tmpdir, sizeof sw->tmpdir, "%s/anytime-sweep-XXXXXX", base);
  if (n < 0 || (size_t)n >= sizeof sw->tmpdir) {
    sw->tmpdir[0] = '\0';
    errno = ENAMETOOLONG;
    return -1;
  }
  if (mkdtemp(sw->tmpdir)) return 0;
  sw->tmpdir[0] = '\0';
  return -1;
}

/* The sweep's temporary directory holds only files (server log, port
 * file, one-variant config, plot data): remove them, then it. */
static void remove_tmpdir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  char path[PATH_MAX];
  for (struct dirent *e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

void sweep_destroy(sweep *sw) {
  if (!sw) return;
  if (sw->have_data) lg_data_free(&sw->data);
  if (sw->tmpdir[0]) { /* made by sweep_make_tmpdir */
    if (sw->failures == 0)
      remove_tmpdir(sw->tmpdir);
    else
      fprintf(stderr, "sweep: kept %s (the servers' log) for the failures above\n", sw->tmpdir);
  }
  free(sw);
}

int sweep_failures(const sweep *sw) {
  return sw->failures;
}

void sweep_get_capacities(const sweep *sw, sweep_capacities *out) {
  *out = (sweep_capacities){.accurate_variant = sw->mc->variants[sw->acc_v].name,
                            .cheapest_variant = sw->mc->variants[sw->cheap_v].name,
                            .capacity_rps = sw->capacity,
                            .cheapest_capacity_rps = sw->cheap_capacity,
                            .deadline_ms = sw->deadline,
                            .workers = sw->cfg.workers};
}

/* The generation lane's model directory written absolute (the writer
 * writes it as the file had it, relative to a directory the new file is
 * not in); a name that is not a directory here (a hub id) stays. */
static void generator_path_absolute(at_server_config *c) {
  struct stat st;
  char rp[PATH_MAX];
  if (!c->generator.enabled || stat(c->generator.model, &st) != 0 || !S_ISDIR(st.st_mode) ||
      !realpath(c->generator.model, rp) || strlen(rp) >= sizeof c->generator.model_raw)
    return;
  memcpy(c->generator.model_raw, rp, strlen(rp) + 1);
}

/* Written through the configuration's writers (config.c), so every key of
 * the model and of the variant carries over (the length model, bucketing)
 * as the table knows them; it used to be written by hand, key by key, and
 * dropped any key it did not list. */
int sweep_write_variant_config(const at_server_config *cfg, int m, int v, bool others,
                               const char *rel_dir, const char *cfg_path, const char *path) {
  at_server_config *one = malloc(sizeof *one); /* ~400 KB: not on the stack */
  if (!one) return -1;
  *one = *cfg;
  int mo = others ? m : 0;
  if (!others) one->n_models = 1, one->models[0] = cfg->models[m];
  one->models[mo].n_variants = 1;
  one->models[mo].variants[0] = cfg->models[m].variants[v];
  if (others) generator_path_absolute(one);
  /* every setting, one writer; paths outside the directory the file is
   * written to are written absolute */
  char *settings = at_server_config_settings_yaml(one, 0);
  char *models = settings ? at_server_config_models_yaml(one, rel_dir, NULL) : NULL;
  char *gen = models && others ? at_server_config_generator_yaml(one) : NULL;
  free(one);
  FILE *f = models && (gen || !others) ? fopen(path, "w") : NULL;
  int rc = -1;
  if (f) {
    fprintf(f, "# written by `anytime sweep`: %s with only variant %s\n", cfg_path,
            cfg->models[m].variants[v].name);
    rc = fputs(settings, f) >= 0 && fputs(models, f) >= 0 && (!gen || fputs(gen, f) >= 0) ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
  }
  free(settings);
  free(models);
  free(gen);
  return rc;
}

int sweep_write_cheap_config(const at_server_config *cfg, const char *cfg_path,
                             const char *out_path) {
  int acc_v, cheap_v;
  double best_acc;
  int mi = pick_variants(cfg, cfg_path, &acc_v, &cheap_v, &best_acc);
  if (mi < 0) return -1;
  /* the directory the file goes to, absolute: model paths under it are
   * written relative to it, every other one absolute */
  char dir[PATH_MAX], abs_dir[PATH_MAX];
  const char *slash = strrchr(out_path, '/');
  size_t dl = slash ? (size_t)(slash - out_path) : 0;
  if (slash && dl == 0) dl = 1; /* "/x.yaml" */
  if (dl >= sizeof dir) dl = sizeof dir - 1;
  memcpy(dir, slash ? out_path : ".", slash ? dl : 1);
  dir[slash ? dl : 1] = '\0';
  if (!realpath(dir, abs_dir) ||
      sweep_write_variant_config(cfg, mi, cheap_v, true, abs_dir, cfg_path, out_path) != 0) {
    fprintf(stderr, "anytime sweep: cannot write %s\n", out_path);
    return -1;
  }
  fprintf(stderr,
          "sweep: wrote %s: %s with model %s holding only its cheapest frontier variant, %s\n",
          out_path, cfg_path, cfg->models[mi].name, cfg->models[mi].variants[cheap_v].name);
  return 0;
}
