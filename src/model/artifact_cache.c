/* src/model/artifact_cache.c — the compiled-artifact cache: the first load
 * of a model saves ONNX Runtime's optimised graph (ORT format) under a key,
 * later loads with the same key skip graph optimisation and load that file.
 * The public at_session_create() is defined here (end of file): with
 * at_session_params.artifact_cache_dir set it goes through
 * at_artifact_session_create(), which opens sessions with src/ort's plain
 * at_ort_session_open(); otherwise straight to the latter. So src/ort never
 * calls back into src/model (see anytime/model.h for the cache itself).
 *
 * DESIGN
 *   Key: SHA-256 over the model file's SHA-256, the ORT release of the loaded
 *     library, the optimisation level, the execution provider and the CPU
 *     feature flags the optimised graph may depend on (ORT_ENABLE_ALL inserts
 *     CPU-specific kernels). Any change gives a new key, so a stale artifact
 *     is never found; old entries stay until `anytime cache clear`.
 *   Layout: <dir>/<key>/model.ort and <dir>/<key>/meta.json (the sidecar:
 *     key ingredients, labels, the artifact's size and SHA-256).
 *   Publication: an entry is built in <dir>/.tmp-XXXXXX (mkdtemp), both files
 *     are fsync()ed, the directory is renamed to <dir>/<key> in one step and
 *     <dir> is fsync()ed. rename() of a directory onto an existing non-empty
 *     one fails, so when two processes build at once the first rename wins,
 *     the loser deletes its copy, and a reader sees either no entry or a
 *     complete one — never a half-written artifact. Published entries are
 *     never modified, only removed whole (renamed to .trash-XXXXXX first).
 *   Stat memos: hashing a large file costs about 1.4 ms per MB here (0.6 s
 *     for BERT-base's 435 MB), so <dir>/.hashes/<sha256 of its real path>
 *     remembers a file's SHA-256 together with its device, inode, size,
 *     mtime and ctime (nanoseconds) — the stat facts git's index trusts.
 *     Any write to the file changes its ctime (the kernel sets it; it cannot
 *     be set back), and a replacement has another inode, so a changed file
 *     never matches. As in git's "racy" rule, a memo is only written when
 *     the file is unchanged across the hashing and its mtime and ctime are
 *     older than one timestamp tick can hide (100 ms with sub-second
 *     timestamps, 2 s without). Two files get memos: the model (its hash is
 *     the key's first ingredient) and each published artifact (written at
 *     publication from the hash the sidecar records, when not racy, else by
 *     the first hit that hashes it).
 *   Verification: every hit reads the sidecar and compares the artifact's
 *     size and SHA-256 with it; the SHA-256 comes from the artifact's stat
 *     memo when the file is unchanged, otherwise the artifact is re-hashed
 *     in full. A mismatch, an unreadable sidecar or an artifact ORT refuses
 *     is logged (warn), discarded and rebuilt. What the memo does not catch
 *     is what no stat can see: bits that rot on the medium under an
 *     unchanged inode, which go unnoticed just as they would in the model
 *     file itself (`anytime cache clear` starts over).
 *   Failure: the cache never fails a load. A directory that cannot be made
 *     or written turns caching off for that load with a warning (once per
 *     directory and process) and the model is loaded normally.
 *   Threads: no shared mutable state except the once-initialised CPU feature
 *     string and the warn-once flag (atomic); the test override is set by
 *     tests before any load.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "anytime/runtime.h"
#include "core/internal.h"
#include "model/model_internal.h"
#include "model/sha256.h"
#include "ort/session_plain.h"

#define FORMAT_VERSION 1
#define PATH_CAP AT_PATH_CAP
#define MAX_META_BYTES (64u << 10)
#define PROVIDER "CPUExecutionProvider"


/* 64 lower-case hex digits (a SHA-256 in hex) at the start of s. */
static int is_hex_digest(const char *s) {
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

/* ---- where ------------------------------------------------------------- */

at_status at_artifact_cache_dir(const char *override, char *buf, size_t cap) {
  if (!buf || cap == 0) return at_fail(AT_ERR_INVALID_ARG, "buffer required");
  const char *e;
  int n;
  if (override && *override) n = snprintf(buf, cap, "%s/artifacts", override);
  else if ((e = getenv("ANYTIME_CACHE_DIR")) && *e) n = snprintf(buf, cap, "%s/artifacts", e);
  else if ((e = getenv("XDG_CACHE_HOME")) && *e) n = snprintf(buf, cap, "%s/anytime/artifacts", e);
  else if ((e = getenv("HOME")) && *e) n = snprintf(buf, cap, "%s/.cache/anytime/artifacts", e);
  else
    return at_fail(AT_ERR_NOT_FOUND,
                   "no --cache-dir, ANYTIME_CACHE_DIR, XDG_CACHE_HOME or HOME for the cache");
  if (n < 0 || (size_t)n >= cap) return at_fail(AT_ERR_LIMIT, "cache path is too long");
  return AT_OK;
}

/* ---- key ingredients ------------------------------------------------------ */

static const char *g_test_release, *g_test_cpu;

void at_artifact_test_override(const char *ort_release, const char *cpu_features) {
  g_test_release = ort_release;
  g_test_cpu = cpu_features;
}

static char g_cpu[1024];
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first "flags" (x86) or "Features" (Arm) line of /proc/cpuinfo,
 * filtered to the instruction-set extensions ORT's CPU kernels choose
 * between, sorted; prefixed by the machine name. */
static void cpu_init(void) {
  static const char *const relevant[] = {
      "sse3", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "bmi1", "bmi2",
      "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd", "avx512_vnni", "avx512_bf16",
      "avx512_fp16", "avx512vbmi", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16", "amx_fp16",
      "asimd", "asimddp", "asimdhp", "sve", "sve2", "i8mm", "bf16", "fphp", "sme"};
  struct utsname u;
  const char *machine = uname(&u) == 0 ? u.machine : "unknown-machine";
  const char *found[sizeof relevant / sizeof relevant[0]];
  size_t nf = 0;
  FILE *f = fopen("/proc/cpuinfo", "r");
  char *line = NULL;
  size_t cap = 0;
  int got = 0;
  while (f && !got && getline(&line, &cap, f) > 0) {
    if (strncmp(line, "flags", 5) != 0 && strncmp(line, "Features", 8) != 0) continue;
    char *colon = strchr(line, ':');
    if (!colon) continue;
    got = 1;
    for (char *tok = strtok(colon + 1, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
      for (size_t i = 0; i < sizeof relevant / sizeof relevant[0]; i++)
        if (strcmp(tok, relevant[i]) == 0) {
          int dup = 0;
          for (size_t k = 0; k < nf; k++) dup |= found[k] == relevant[i];
          if (!dup) found[nf++] = relevant[i];
        }
  }
  free(line);
  if (f) fclose(f);
  qsort(found, nf, sizeof found[0], cmp_str);
  size_t o = (size_t)snprintf(g_cpu, sizeof g_cpu, "%s%s", machine, got ? "" : " flags-unknown");
  for (size_t i = 0; i < nf && o < sizeof g_cpu; i++)
    o += (size_t)snprintf(g_cpu + o, sizeof g_cpu - o, " %s", found[i]);
}

const char *at_artifact_cpu_features(void) {
  if (g_test_cpu) return g_test_cpu;
  pthread_once(&g_cpu_once, cpu_init);
  return g_cpu;
}

static const char *opt_name(at_opt_level l) {
  switch (l) {
    case AT_OPT_DISABLE: return "disable";
    case AT_OPT_BASIC: return "basic";
    case AT_OPT_EXTENDED: return "extended";
    case AT_OPT_ALL: return "all";
  }
  return "unknown";
}

void at_artifact_key(const at_artifact_ingredients *ing, char key_hex[65]) {
  char text[2048];
  int n = snprintf(text, sizeof text,
                   "anytime-artifact-v%d\nmodel=%s\nort=%s\nopt=%s\nprovider=%s\ncpu=%s\n",
                   FORMAT_VERSION, ing->model_sha256, ing->ort_release, ing->opt_level,
                   ing->provider, ing->cpu_features);
  uint8_t d[32];
  at_sha256_once(text, n < (int)sizeof text ? (size_t)n : sizeof text - 1, d);
  at_sha256_hex(d, key_hex);
}

/* ---- small file-system helpers ------------------------------------------ */

static int mkdirs(const char *path) {
  char tmp[PATH_CAP];
  if (at_model_fmt(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(tmp, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

static int fsync_path(const char *path, int dir) {
  int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return -1;
  int r = fsync(fd);
  close(fd);
  return r;
}

/* Remove a directory anytime made (plain files inside, no subdirectories). */
static int remove_entry_dir(const char *path) {
  DIR *dp = opendir(path);
  if (!dp) return errno == ENOENT ? 0 : -1;
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(dp))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (unlinkat(dirfd(dp), de->d_name, 0) != 0 && errno != ENOENT) rc = -1;
  }
  closedir(dp);
  if (rmdir(path) != 0 && errno != ENOENT) rc = -1;
  return rc;
}

/* Take a published entry out of service: rename it away in one step (so no
 * reader sees it half-deleted), then delete it. */
static void discard_entry(const char *dir, const char *entry) {
  char trash[PATH_CAP];
  at_model_fmt(trash, sizeof trash, "%s/.trash-XXXXXX", dir);
  /* rename() may replace an empty directory: mkdtemp reserves the name. */
  if (mkdtemp(trash)) {
    if (rename(entry, trash) == 0) {
      remove_entry_dir(trash);
      return;
    }
    rmdir(trash);
  }
  remove_entry_dir(entry); /* someone else removed it, or no rename possible */
}

static int warned_unusable;

static void warn_unusable(const char *dir, const char *why) {
  if (__atomic_exchange_n(&warned_unusable, 1, __ATOMIC_ACQ_REL) == 0)
    at_log(AT_LOG_WARN, "cache",
           "artifact cache %s is not usable (%s); loading models without it", dir, why);
  else
    at_log(AT_LOG_DEBUG, "cache", "artifact cache %s is not usable (%s)", dir, why);
}

static int write_file_synced(const char *path, const char *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return -1;
    }
    off += (size_t)w;
  }
  if (fsync(fd) != 0) {
    close(fd);
    return -1;
  }
  return close(fd);
}

/* ---- stat memos: a file's SHA-256 remembered against its stat facts ---- */

/* A memo is written only for a file whose mtime and ctime are older than
 * this when it is re-stat()ed after hashing: a later write then falls into
 * a later timestamp tick and moves ctime. Linux file systems with
 * sub-second timestamps take them from the kernel's coarse clock (one tick,
 * at most 10 ms), so 100 ms is ample there; a file system that stores whole
 * seconds (every nanosecond field zero) gets git's cautious two seconds. */
#define RACY_FINE_NS 100000000LL
#define RACY_COARSE_NS 2000000000LL

static int memo_path(const char *dir, const char *path, char *out, size_t cap) {
  char real[PATH_MAX];
  if (!realpath(path, real)) return -1;
  uint8_t d[32];
  char hex[65];
  at_sha256_once(real, strlen(real), d);
  at_sha256_hex(d, hex);
  return at_model_fmt(out, cap, "%s/.hashes/%s", dir, hex) ? 0 : -1;
}

static void stat_line(const struct stat *st, char *buf, size_t cap) {
  at_model_fmt(buf, cap, "%llu %llu %lld %lld.%09ld %lld.%09ld", (unsigned long long)st->st_dev,
      (unsigned long long)st->st_ino, (long long)st->st_size, (long long)st->st_mtim.tv_sec,
      st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

static int same_stat(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
         a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The SHA-256 remembered for `path` in hex, if its memo was written for
 * exactly the stat facts `st`: 1 with hex filled, else 0. */
static int memo_lookup(const char *dir, const char *path, const struct stat *st, char hex[65]) {
  char memo[PATH_CAP], want[256], line[512];
  if (memo_path(dir, path, memo, sizeof memo) != 0) return 0;
  stat_line(st, want, sizeof want);
  FILE *f = fopen(memo, "r");
  if (!f) return 0;
  int hit = 0;
  if (fgets(line, sizeof line, f)) {
    size_t n = strlen(want);
    if (strncmp(line, want, n) == 0 && line[n] == ' ' && is_hex_digest(line + n + 1)) {
      memcpy(hex, line + n + 1, 64);
      hex[64] = 0;
      hit = 1;
    }
  }
  fclose(f);
  return hit;
}

/* Nanoseconds from a file timestamp to the wall clock `now` (negative for
 * a timestamp in the future). */
static long long age_ns(const struct timespec *now, const struct timespec *t) {
  return (long long)(now->tv_sec - t->tv_sec) * 1000000000LL + (now->tv_nsec - t->tv_nsec);
}

/* Remember `hex` as the SHA-256 of `path`, whose stat facts were `before`
 * when hashing began: only if the file is unchanged since (same stat) and
 * not "racy" (see RACY_*). Best effort: a memo that cannot be written is
 * simply not there next time. */
static void memo_store(const char *dir, const char *path, const struct stat *before,
                       const char *hex) {
  struct stat after;
  struct timespec now;
  char memo[PATH_CAP];
  if (stat(path, &after) != 0 || !same_stat(before, &after) ||
      clock_gettime(CLOCK_REALTIME, &now) != 0 || memo_path(dir, path, memo, sizeof memo) != 0)
    return;
  long long margin =
      (after.st_mtim.tv_nsec == 0 && after.st_ctim.tv_nsec == 0) ? RACY_COARSE_NS : RACY_FINE_NS;
  if (age_ns(&now, &after.st_mtim) <= margin || age_ns(&now, &after.st_ctim) <= margin) return;
  char hdir[PATH_CAP], tmp[PATH_CAP + 16], want[256], text[400];
  stat_line(&after, want, sizeof want);
  at_model_fmt(hdir, sizeof hdir, "%s/.hashes", dir);
  at_model_fmt(tmp, sizeof tmp, "%s.%ld.tmp", memo, (long)getpid());
  at_model_fmt(text, sizeof text, "%s %s\n", want, hex);
  if (mkdirs(hdir) == 0 && write_file_synced(tmp, text, strlen(text)) == 0 &&
      rename(tmp, memo) == 0)
    return;
  unlink(tmp);
}

/* The SHA-256 of `path` in hex: from its memo when the file is unchanged,
 * else read in full (and remembered when the file is not "racy").
 * *from_memo says which. */
static at_status file_sha256(const char *dir, const char *path, char hex[65], int *from_memo) {
  struct stat st;
  int have_stat = stat(path, &st) == 0;
  *from_memo = have_stat && memo_lookup(dir, path, &st, hex);
  if (*from_memo) return AT_OK;
  uint8_t d[32];
  at_status rc = at_sha256_file(path, d, NULL);
  if (rc != AT_OK) return rc;
  at_sha256_hex(d, hex);
  if (have_stat) memo_store(dir, path, &st, hex);
  return AT_OK;
}

/* ---- sidecar ---------------------------------------------------------------- */

typedef enum { ENTRY_ABSENT, ENTRY_VALID, ENTRY_CORRUPT } entry_state;

int at_artifact_sidecar_check(json_t *m, const char *key, int64_t *size, const char **sha256) {
  json_t *jfmt = json_object_get(m, "format"), *k = json_object_get(m, "key");
  json_t *sz = json_object_get(m, "artifact_size"), *sum = json_object_get(m, "artifact_sha256");
  if (!json_is_integer(jfmt) || json_integer_value(jfmt) != FORMAT_VERSION || !json_is_string(k) ||
      strcmp(json_string_value(k), key) != 0 || !json_is_integer(sz) || !json_is_string(sum))
    return -1;
  *size = (int64_t)json_integer_value(sz);
  *sha256 = json_string_value(sum);
  return 0;
}

/* Is <entry> a complete entry for `key` whose artifact still has the bytes
 * its sidecar recorded? The artifact's SHA-256 comes from its stat memo
 * when the file is unchanged since it was last hashed (*by_memo = 1), else
 * it is read in full. */
static entry_state check_entry(const char *dir, const char *entry, const char *key, char *why,
                               size_t cap, int *by_memo) {
  char meta[PATH_CAP], art[PATH_CAP];
  at_model_fmt(meta, sizeof meta, "%s/meta.json", entry);
  at_model_fmt(art, sizeof art, "%s/model.ort", entry);
  struct stat st;
  if (stat(entry, &st) != 0) return ENTRY_ABSENT;
  json_error_t err;
  json_t *m = json_load_file(meta, JSON_REJECT_DUPLICATES, &err);
  if (!m) {
    at_model_fmt(why, cap, "sidecar unreadable: %s", err.text);
    return ENTRY_CORRUPT;
  }
  entry_state r = ENTRY_CORRUPT;
  int64_t size;
  const char *sum;
  if (at_artifact_sidecar_check(m, key, &size, &sum) != 0) {
    at_model_fmt(why, cap, "sidecar does not describe this key");
  } else if (stat(art, &st) != 0) {
    at_model_fmt(why, cap, "artifact missing: %s", strerror(errno));
  } else if ((int64_t)st.st_size != size) {
    at_model_fmt(why, cap, "artifact is %lld bytes, the sidecar says %lld", (long long)st.st_size,
             (long long)size);
  } else {
    char hex[65];
    if (file_sha256(dir, art, hex, by_memo) != AT_OK) {
      at_model_fmt(why, cap, "artifact unreadable: %s", at_last_error());
    } else {
      if (strcmp(hex, sum) != 0)
        at_model_fmt(why, cap, "artifact SHA-256 %.12s... does not match the sidecar's %.12s...",
                 hex, sum);
      else
        r = ENTRY_VALID;
    }
  }
  json_decref(m);
  return r;
}


/* Seal the entry built in tmp and publish it as dir/key. Returns 0 when the
 * entry is in place (ours or a concurrent builder's), -1 with *why set. */
static int publish(const char *dir, const char *tmp, const char *key, const char *model_path,
                   const at_session_params *p, const at_artifact_ingredients *ing, char *why,
                   size_t cap) {
  char art[PATH_CAP], meta[PATH_CAP], entry[PATH_CAP];
  at_model_fmt(art, sizeof art, "%s/model.ort", tmp);
  at_model_fmt(meta, sizeof meta, "%s/meta.json", tmp);
  at_model_fmt(entry, sizeof entry, "%s/%s", dir, key);
  uint8_t d[32];
  char hex[65];
  uint64_t size = 0;
  struct stat before; /* for the artifact's stat memo, written once published */
  if (stat(art, &before) != 0 || at_sha256_file(art, d, &size) != AT_OK || size == 0) {
    at_model_fmt(why, cap, "ONNX Runtime wrote no artifact at %s", art);
    return -1;
  }
  if (fsync_path(art, 0) != 0) {
    at_model_fmt(why, cap, "fsync %s: %s", art, strerror(errno));
    return -1;
  }
  at_sha256_hex(d, hex);
  char abs_model[PATH_MAX];
  if (!realpath(model_path, abs_model)) at_model_fmt(abs_model, sizeof abs_model, "%s", model_path);
  json_t *m = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:I, s:s}",
                        "format", FORMAT_VERSION, "key", key, "model",
                        p->artifact_model ? p->artifact_model : "", "variant",
                        p->artifact_variant ? p->artifact_variant : "", "model_path", abs_model,
                        "model_sha256", ing->model_sha256, "ort_release", ing->ort_release,
                        "opt_level", ing->opt_level, "provider", ing->provider, "cpu_features",
                        ing->cpu_features, "artifact_size", (json_int_t)size, "artifact_sha256",
                        hex, "created_unix", (json_int_t)time(NULL), "anytime_version",
                        AT_VERSION_STRING);
  char *text = m ? json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
  json_decref(m);
  if (!text) {
    at_model_fmt(why, cap, "out of memory writing the sidecar");
    return -1;
  }
  int w = write_file_synced(meta, text, strlen(text));
  free(text);
  if (w != 0 || fsync_path(tmp, 1) != 0) {
    at_model_fmt(why, cap, "writing %s: %s", meta, strerror(errno));
    return -1;
  }
  if (rename(tmp, entry) != 0) {
    if (errno == ENOTEMPTY || errno == EEXIST) {
      at_log(AT_LOG_DEBUG, "cache", "artifact %.12s was published by another process first", key);
      remove_entry_dir(tmp);
      return 0;
    }
    at_model_fmt(why, cap, "rename %s -> %s: %s", tmp, entry, strerror(errno));
    return -1;
  }
  fsync_path(dir, 1);
  /* The hash just computed serves the next start too, if the file has not
   * changed since it was taken (renaming the directory leaves it alone). */
  char published[PATH_CAP];
  at_model_fmt(published, sizeof published, "%s/model.ort", entry);
  memo_store(dir, published, &before, hex);
  return 0;
}

/* ---- the load path ------------------------------------------------------- */

at_status at_artifact_session_create(const char *model_path, const at_session_params *params,
                                     at_session **out, at_artifact_outcome *outcome) {
  at_session_params p = *params;
  const char *dir = p.artifact_cache_dir;
  p.artifact_cache_dir = NULL;
  *outcome = AT_ARTIFACT_UNCACHED;

  at_artifact_ingredients ing;
  memset(&ing, 0, sizeof ing);
  uint64_t t0 = at_now_ns();
  int model_memo = 0;
  if (file_sha256(dir, model_path, ing.model_sha256, &model_memo) != AT_OK)
    return at_ort_session_open(model_path, &p, out); /* gives the proper error */
  uint64_t t_hash = at_now_ns() - t0;
  at_version_info vi;
  const char *release = "unknown";
  if (at_runtime_version_info(&vi) == AT_OK && vi.library_release) release = vi.library_release;
  ing.ort_release = g_test_release ? g_test_release : release;
  ing.opt_level = opt_name(p.opt_level);
  ing.provider = PROVIDER;
  ing.cpu_features = at_artifact_cpu_features();
  char key[65];
  at_artifact_key(&ing, key);

  if (mkdirs(dir) != 0) {
    warn_unusable(dir, strerror(errno));
    return at_ort_session_open(model_path, &p, out);
  }
  char entry[PATH_CAP], why[512] = "";
  if (!at_model_fmt(entry, sizeof entry, "%s/%s", dir, key)) {
    warn_unusable(dir, "path too long");
    return at_ort_session_open(model_path, &p, out);
  }
  const char *label = p.artifact_model ? p.artifact_model : model_path;
  const char *var = p.artifact_variant ? p.artifact_variant : "";
  int by_memo = 0;
  uint64_t t1 = at_now_ns();
  entry_state es = check_entry(dir, entry, key, why, sizeof why, &by_memo);
  uint64_t t_check = at_now_ns() - t1;
  if (es == ENTRY_VALID) {
    char art[PATH_CAP];
    at_model_fmt(art, sizeof art, "%s/model.ort", entry);
    /* Mapped: ORT reads the weights in place instead of copying 0.4 GB. A
     * mapping that fails for its own reasons still leaves the plain load. */
    at_status rc = at_ort_session_open_mapped(art, &p, out);
    if (rc != AT_OK) {
      at_log(AT_LOG_DEBUG, "cache", "mapped load of %s failed (%s); loading it plainly", art,
             at_last_error());
      rc = at_ort_session_open(art, &p, out);
    }
    if (rc == AT_OK) {
      *outcome = AT_ARTIFACT_HIT;
      at_log(AT_LOG_INFO, "cache",
             "%s%s%s: loaded cached artifact %.12s%s (model hash %s %.1f ms; artifact checked "
             "%s in %.1f ms)",
             label, *var ? ":" : "", var, key,
             at_ort_session_mapped_bytes(*out) ? ", mapped" : "",
             model_memo ? "from its stat memo" : "computed", (double)t_hash / 1e6,
             by_memo ? "by its stat memo" : "by a full SHA-256", (double)t_check / 1e6);
      return AT_OK;
    }
    at_model_fmt(why, sizeof why, "ONNX Runtime refused it: %s", at_last_error());
    es = ENTRY_CORRUPT;
  }
  if (es == ENTRY_CORRUPT) {
    at_log(AT_LOG_WARN, "cache", "%s%s%s: cached artifact %.12s is corrupt (%s); discarding it and rebuilding",
           label, *var ? ":" : "", var, key, why);
    discard_entry(dir, entry);
  }

  char tmp[PATH_CAP], art[PATH_CAP];
  at_model_fmt(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir);
  if (!mkdtemp(tmp)) {
    warn_unusable(dir, strerror(errno));
    return at_ort_session_open(model_path, &p, out);
  }
  at_model_fmt(art, sizeof art, "%s/model.ort", tmp);
  p.optimized_model_path = art;
  p.optimized_as_ort = true;
  at_status rc = at_ort_session_open(model_path, &p, out);
  if (rc != AT_OK) {
    /* ONNX Runtime writes the artifact while it creates the session, and a
     * write that fails (a full disk) fails the whole creation. Try once
     * more without writing: if that works the cache was the problem (one
     * warning, served without it); if not, the model's own error stands. */
    char build_err[1024];
    snprintf(build_err, sizeof build_err, "%s", at_last_error());
    remove_entry_dir(tmp);
    p.optimized_model_path = NULL;
    p.optimized_as_ort = false;
    rc = at_ort_session_open(model_path, &p, out);
    if (rc != AT_OK) return rc;
    warn_unusable(dir, build_err);
    return AT_OK;
  }
  if (publish(dir, tmp, key, model_path, &p, &ing, why, sizeof why) != 0) {
    remove_entry_dir(tmp);
    warn_unusable(dir, why);
    return AT_OK;
  }
  *outcome = AT_ARTIFACT_BUILT;
  at_log(AT_LOG_INFO, "cache", "%s%s%s: saved artifact %.12s", label, *var ? ":" : "", var, key);
  return AT_OK;
}

/* ---- listing and clearing ------------------------------------------------------ */

static void copy_str(char *dst, size_t cap, json_t *v) {
  at_model_fmt(dst, cap, "%s", json_is_string(v) ? json_string_value(v) : "");
}

bool at_artifact_sidecar_entry(json_t *m, at_artifact_entry *e) {
  copy_str(e->model, sizeof e->model, json_object_get(m, "model"));
  copy_str(e->variant, sizeof e->variant, json_object_get(m, "variant"));
  copy_str(e->model_path, sizeof e->model_path, json_object_get(m, "model_path"));
  copy_str(e->ort_release, sizeof e->ort_release, json_object_get(m, "ort_release"));
  copy_str(e->opt_level, sizeof e->opt_level, json_object_get(m, "opt_level"));
  copy_str(e->provider, sizeof e->provider, json_object_get(m, "provider"));
  json_t *sz = json_object_get(m, "artifact_size"), *c = json_object_get(m, "created_unix");
  bool has_size = json_is_integer(sz) && json_integer_value(sz) >= 0; /* a size a file can have */
  e->size_bytes = has_size ? (uint64_t)json_integer_value(sz) : 0;
  e->created_unix = json_is_integer(c) ? (int64_t)json_integer_value(c) : 0;
  return has_size;
}

static int entry_newer_first(const void *a, const void *b) {
  const at_artifact_entry *x = a, *y = b;
  if (x->created_unix != y->created_unix) return x->created_unix > y->created_unix ? -1 : 1;
  return strcmp(x->key, y->key);
}

static int is_key_name(const char *s) {
  return strlen(s) == 64 && is_hex_digest(s);
}

at_status at_artifact_cache_list(const char *dir, at_artifact_entry **out, size_t *n) {
  if (!dir || !out || !n) return at_fail(AT_ERR_INVALID_ARG, "dir, out and n are required");
  *out = NULL;
  *n = 0;
  DIR *dp = opendir(dir);
  if (!dp) {
    if (errno == ENOENT) return AT_OK;
    return at_fail(AT_ERR_IO, "cannot list %s: %s", dir, strerror(errno));
  }
  at_artifact_entry *v = NULL;
  size_t cap = 0;
  struct dirent *de;
  at_status rc = AT_OK;
  while ((de = readdir(dp))) {
    if (!is_key_name(de->d_name)) continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      at_artifact_entry *nv = realloc(v, cap * sizeof *nv);
      if (!nv) {
        rc = at_fail(AT_ERR_NOMEM, "out of memory");
        break;
      }
      v = nv;
    }
    at_artifact_entry *e = &v[*n];
    memset(e, 0, sizeof *e);
    at_model_fmt(e->key, sizeof e->key, "%s", de->d_name);
    char meta[PATH_CAP], art[PATH_CAP];
    at_model_fmt(meta, sizeof meta, "%s/%s/meta.json", dir, de->d_name);
    at_model_fmt(art, sizeof art, "%s/%s/model.ort", dir, de->d_name);
    struct stat st, sa;
    json_t *m = NULL;
    if (stat(meta, &st) == 0 && st.st_size <= (off_t)MAX_META_BYTES)
      m = json_load_file(meta, 0, NULL);
    if (m) {
      bool has_size = at_artifact_sidecar_entry(m, e);
      e->valid = stat(art, &sa) == 0 && has_size && (uint64_t)sa.st_size == e->size_bytes;
      json_decref(m);
    }
    (*n)++;
  }
  closedir(dp);
  if (rc != AT_OK) {
    free(v);
    *n = 0;
    return rc;
  }
  if (*n) qsort(v, *n, sizeof *v, entry_newer_first);
  *out = v;
  return AT_OK;
}

at_status at_artifact_cache_clear(const char *dir, size_t *removed) {
  if (!dir) return at_fail(AT_ERR_INVALID_ARG, "dir is required");
  if (removed) *removed = 0;
  DIR *dp = opendir(dir);
  if (!dp) {
    if (errno == ENOENT) return AT_OK;
    return at_fail(AT_ERR_IO, "cannot list %s: %s", dir, strerror(errno));
  }
  struct dirent *de;
  at_status rc = AT_OK;
  while ((de = readdir(dp))) {
    int key = is_key_name(de->d_name);
    if (!key && strncmp(de->d_name, ".tmp-", 5) != 0 && strncmp(de->d_name, ".trash-", 7) != 0 &&
        strcmp(de->d_name, ".hashes") != 0)
      continue;
    char p[PATH_CAP];
    at_model_fmt(p, sizeof p, "%s/%s", dir, de->d_name);
    if (remove_entry_dir(p) != 0)
      rc = at_fail(AT_ERR_IO, "could not remove %s: %s", p, strerror(errno));
    else if (key && removed)
      (*removed)++;
  }
  closedir(dp);
  return rc;
}

/* ---- the public entry point ---------------------------------------------- */

/* anytime/session.h's at_session_create(): the artifact cache around
 * src/ort's plain creation when params ask for it (a cache directory and
 * no explicit optimized_model_path), the plain creation otherwise. */
at_status at_session_create(const char *model_path, const at_session_params *params,
                            at_session **out) {
  if (!model_path || !out) return at_fail(AT_ERR_INVALID_ARG, "model_path and out are required");
  *out = NULL;
  if (!params || !params->artifact_cache_dir || params->optimized_model_path)
    return at_ort_session_open(model_path, params, out);
  at_status rc = at_runtime_init();
  if (rc != AT_OK) return rc;
  at_artifact_outcome outcome = AT_ARTIFACT_OFF;
  rc = at_artifact_session_create(model_path, params, out, &outcome);
  if (rc == AT_OK) at_ort_session_set_artifact(*out, outcome);
  return rc;
}
