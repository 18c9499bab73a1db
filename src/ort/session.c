/* src/ort/session.c — one OrtSession over one model file: options, the
 * model's signature, and a synchronous Run over caller-owned buffers.
 *
 * Creation here is plain (at_ort_session_open), or from a mapped
 * ORT-format file (at_ort_session_open_mapped, for the artifact cache's
 * hits); the public at_session_create() is in src/model/artifact_cache.c,
 * which adds the artifact cache around them.
 *
 * DESIGN: after at_session_create() returns, a session is immutable (the
 * signature strings, the memory info and the OrtSession are only read), so
 * any number of threads may call at_session_run() on it at once; ORT's
 * CPU Run is itself thread-safe. Each run wraps the caller's buffers with
 * CreateTensorWithDataAsOrtValue (no copy) and returns ORT-allocated outputs
 * inside an at_outputs, which exposes them as views (no copy). A mapped
 * session owns its read-only mapping: ORT's initializers point into it, so
 * it is unmapped only after ReleaseSession, in at_session_destroy().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anytime/onnx_meta.h"
#include "anytime/session.h"
#include "core/internal.h"
#include "ort/ort_internal.h"
#include "ort/session_plain.h"

#define AT_SESSION_MAX_IO 64

struct at_session {
  OrtSession *ort;
  OrtMemoryInfo *mem;
  at_model_info info;
  at_value_info inputs[AT_SESSION_MAX_IO];
  at_value_info outputs[AT_SESSION_MAX_IO];
  const char *input_names[AT_SESSION_MAX_IO];  /* point into inputs[].name */
  const char *output_names[AT_SESSION_MAX_IO];
  char *strings;        /* one arena holding every name string */
  size_t strings_len, strings_cap;
  at_artifact_outcome artifact;  /* what the artifact cache did */
  void *map;            /* the ORT-format file ORT reads its weights from, or NULL */
  size_t map_len;       /* unmapped only after the OrtSession is released */
};

struct at_outputs {
  size_t n;
  OrtValue **values;
  at_tensor *views;
};

at_session_params at_session_default_params(void) {
  at_session_params p;
  memset(&p, 0, sizeof p);
  p.intra_op_threads = 1;
  p.inter_op_threads = 1;
  p.allow_spinning = false;
  p.cpu_mem_arena = true;
  p.opt_level = AT_OPT_ALL;
  p.optimized_model_path = NULL;
  p.optimized_as_ort = true;
  p.artifact_cache_dir = NULL;
  return p;
}

static at_dtype from_ort_type(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return AT_DTYPE_FLOAT32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return AT_DTYPE_INT64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return AT_DTYPE_INT32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return AT_DTYPE_UINT8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return AT_DTYPE_INT8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return AT_DTYPE_BOOL;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return AT_DTYPE_FLOAT16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return AT_DTYPE_FLOAT64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING: return AT_DTYPE_STRING;
    default: return AT_DTYPE_UNKNOWN;
  }
}

static ONNXTensorElementDataType to_ort_type(at_dtype t) {
  switch (t) {
    case AT_DTYPE_FLOAT32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case AT_DTYPE_INT64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case AT_DTYPE_INT32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case AT_DTYPE_UINT8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case AT_DTYPE_INT8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case AT_DTYPE_BOOL: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
    case AT_DTYPE_FLOAT16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    case AT_DTYPE_FLOAT64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
    default: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }
}

/* AllocatorFree returns a status that is always NULL for the default
 * allocator; release it anyway rather than ignore it. */
static void free_ort_string(OrtAllocator *alloc, char *p) {
  OrtStatus *st = at_ort_api()->AllocatorFree(alloc, p);
  if (st) at_ort_api()->ReleaseStatus(st);
}

/* Append a string to the session's string arena; returns its offset or
 * (size_t)-1. Offsets, not pointers, because the arena may move; they are
 * turned into pointers once the arena is final (fix_strings). */
static size_t intern(at_session *s, const char *str) {
  size_t n = strlen(str) + 1;
  if (s->strings_len + n > s->strings_cap) {
    size_t cap = s->strings_cap ? s->strings_cap * 2 : 1024;
    while (cap < s->strings_len + n) cap *= 2;
    char *p = realloc(s->strings, cap);
    if (!p) return (size_t)-1;
    s->strings = p;
    s->strings_cap = cap;
  }
  memcpy(s->strings + s->strings_len, str, n);
  size_t off = s->strings_len;
  s->strings_len += n;
  return off;
}

#define OFF(x) ((const char *)(uintptr_t)(x))
#define FIX(p) ((p) = s->strings + (uintptr_t)(p))

static void fix_strings(at_session *s) {
  at_value_info *lists[2] = {s->inputs, s->outputs};
  size_t counts[2] = {s->info.n_inputs, s->info.n_outputs};
  for (int l = 0; l < 2; l++)
    for (size_t i = 0; i < counts[l]; i++) {
      FIX(lists[l][i].name);
      for (size_t d = 0; d < lists[l][i].ndim; d++) FIX(lists[l][i].dim_names[d]);
    }
  FIX(s->info.producer_name);
  FIX(s->info.producer_version);
  FIX(s->info.graph_name);
  FIX(s->info.domain);
  for (size_t i = 0; i < s->info.n_inputs; i++) s->input_names[i] = s->inputs[i].name;
  for (size_t i = 0; i < s->info.n_outputs; i++) s->output_names[i] = s->outputs[i].name;
}

static at_status read_value_info(at_session *s, int is_input, size_t idx,
                                 OrtAllocator *alloc, at_value_info *vi) {
  const OrtApi *api = at_ort_api();
  char *name = NULL;
  OrtStatus *st = is_input ? api->SessionGetInputName(s->ort, idx, alloc, &name)
                           : api->SessionGetOutputName(s->ort, idx, alloc, &name);
  if (st) return at_ort_fail(st, AT_ERR_MODEL, "reading the model's signature");
  size_t off = intern(s, name);
  free_ort_string(alloc, name);
  if (off == (size_t)-1) return at_fail(AT_ERR_NOMEM, "out of memory");
  vi->name = OFF(off);

  OrtTypeInfo *ti = NULL;
  st = is_input ? api->SessionGetInputTypeInfo(s->ort, idx, &ti)
                : api->SessionGetOutputTypeInfo(s->ort, idx, &ti);
  if (st) return at_ort_fail(st, AT_ERR_MODEL, "reading the model's signature");
  const OrtTensorTypeAndShapeInfo *tsi = NULL;
  st = api->CastTypeInfoToTensorInfo(ti, &tsi);
  if (st || !tsi) {
    if (st) api->ReleaseStatus(st);
    api->ReleaseTypeInfo(ti);
    return at_fail(AT_ERR_UNSUPPORTED, "model %s #%zu is not a tensor (sequences and maps are not supported)",
                   is_input ? "input" : "output", idx);
  }
  ONNXTensorElementDataType et;
  size_t nd = 0;
  at_status rc = AT_OK;
  if ((st = api->GetTensorElementType(tsi, &et)) || (st = api->GetDimensionsCount(tsi, &nd))) {
    rc = at_ort_fail(st, AT_ERR_MODEL, "reading the model's signature");
  } else if (nd > AT_MAX_DIMS) {
    rc = at_fail(AT_ERR_UNSUPPORTED, "tensor has %zu dimensions; at most %d are supported", nd,
                 AT_MAX_DIMS);
  } else {
    vi->dtype = from_ort_type(et);
    vi->ndim = nd;
    const char *sym[AT_MAX_DIMS] = {0};
    if ((st = api->GetDimensions(tsi, vi->dims, nd)) ||
        (st = api->GetSymbolicDimensions(tsi, sym, nd))) {
      rc = at_ort_fail(st, AT_ERR_MODEL, "reading the model's signature");
    } else {
      for (size_t d = 0; d < nd && rc == AT_OK; d++) {
        if (vi->dims[d] < 0) vi->dims[d] = -1;
        size_t o = intern(s, sym[d] ? sym[d] : "");
        if (o == (size_t)-1) rc = at_fail(AT_ERR_NOMEM, "out of memory");
        vi->dim_names[d] = OFF(o);
      }
    }
  }
  api->ReleaseTypeInfo(ti);
  return rc;
}

/* Read opset, IR and producer version from the file itself (ORT does not
 * expose them); leaves `meta` zeroed for .ort files or unreadable headers. */
static void read_onnx_header(const char *path, at_onnx_meta *meta) {
  memset(meta, 0, sizeof *meta);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      if (at_onnx_meta_parse(m, (size_t)st.st_size, meta) != AT_OK)
        memset(meta, 0, sizeof *meta);
      munmap(m, (size_t)st.st_size);
    }
  }
  close(fd);
}

static at_status read_metadata(at_session *s, OrtAllocator *alloc) {
  const OrtApi *api = at_ort_api();
  OrtModelMetadata *md = NULL;
  OrtStatus *st = api->SessionGetModelMetadata(s->ort, &md);
  if (st) return at_ort_fail(st, AT_ERR_MODEL, "reading model metadata");
  char *v = NULL;
  size_t offs[4];
  OrtStatus *(ORT_API_CALL * getters[4])(const OrtModelMetadata *, OrtAllocator *, char **) = {
      api->ModelMetadataGetProducerName, api->ModelMetadataGetDescription,
      api->ModelMetadataGetGraphName, api->ModelMetadataGetDomain};
  at_status rc = AT_OK;
  for (int i = 0; i < 4; i++) {
    v = NULL;
    st = getters[i](md, alloc, &v);
    if (st) {
      api->ReleaseStatus(st);
      v = NULL;
    }
    offs[i] = intern(s, v ? v : "");
    if (v) free_ort_string(alloc, v);
    if (offs[i] == (size_t)-1) rc = at_fail(AT_ERR_NOMEM, "out of memory");
  }
  api->ReleaseModelMetadata(md);
  s->info.producer_name = OFF(offs[0]);
  s->info.graph_name = OFF(offs[2]);
  s->info.domain = OFF(offs[3]);
  return rc;
}

/* Map an ORT-format file read-only for at_ort_session_open_mapped(). */
static at_status map_file(const char *path, void **map, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return at_fail(AT_ERR_NOT_FOUND, "model file '%s': %s", path, strerror(errno));
  struct stat st;
  at_status rc = AT_OK;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    rc = at_fail(AT_ERR_NOT_FOUND, "model '%s' is not a non-empty regular file", path);
  } else {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      rc = at_fail(AT_ERR_IO, "cannot map model file '%s': %s", path, strerror(errno));
    } else {
      *map = m;
      *len = (size_t)st.st_size;
    }
  }
  close(fd);
  return rc;
}

/* Free a session whose OrtSession was never created. */
static void free_unopened(at_session *s) {
  if (s->map) munmap(s->map, s->map_len);
  free(s);
}

/* Both entry points: from the file at model_path, or (mapped) from the
 * ORT-format file mapped at map[0..map_len), which the session then owns. */
static at_status session_open(const char *model_path, void *map, size_t map_len,
                              const at_session_params *params, at_session **out) {
  at_session_params p = params ? *params : at_session_default_params();
  const OrtApi *api = at_ort_api();
  at_status rc = AT_OK;
  at_session *s = calloc(1, sizeof *s);
  if (!s) {
    if (map) munmap(map, map_len);
    return at_fail(AT_ERR_NOMEM, "out of memory");
  }
  s->map = map;
  s->map_len = map_len;

  OrtSessionOptions *so = NULL;
  OrtStatus *st = api->CreateSessionOptions(&so);
  if (st) {
    free_unopened(s);
    return at_ort_fail(st, AT_ERR_ORT, "creating session options");
  }
  GraphOptimizationLevel lvl = ORT_ENABLE_ALL;
  switch (p.opt_level) {
    case AT_OPT_DISABLE: lvl = ORT_DISABLE_ALL; break;
    case AT_OPT_BASIC: lvl = ORT_ENABLE_BASIC; break;
    case AT_OPT_EXTENDED: lvl = ORT_ENABLE_EXTENDED; break;
    case AT_OPT_ALL: lvl = ORT_ENABLE_ALL; break;
  }
  if ((st = api->SetIntraOpNumThreads(so, p.intra_op_threads > 0 ? p.intra_op_threads : 1)) ||
      (st = api->SetInterOpNumThreads(so, p.inter_op_threads > 0 ? p.inter_op_threads : 1)) ||
      (st = api->SetSessionGraphOptimizationLevel(so, lvl)) ||
      (st = api->AddSessionConfigEntry(so, "session.intra_op.allow_spinning",
                                       p.allow_spinning ? "1" : "0")) ||
      (st = api->AddSessionConfigEntry(so, "session.inter_op.allow_spinning",
                                       p.allow_spinning ? "1" : "0")) ||
      (!p.cpu_mem_arena && (st = api->DisableCpuMemArena(so)))) {
    api->ReleaseSessionOptions(so);
    free_unopened(s);
    return at_ort_fail(st, AT_ERR_ORT, "setting session options");
  }
  if (map && ((st = api->AddSessionConfigEntry(so, "session.use_ort_model_bytes_directly", "1")) ||
              (st = api->AddSessionConfigEntry(so, "session.use_ort_model_bytes_for_initializers",
                                               "1")))) {
    api->ReleaseSessionOptions(so);
    free_unopened(s);
    return at_ort_fail(st, AT_ERR_ORT, "setting session options");
  }
  if (p.optimized_model_path) {
    if ((st = api->SetOptimizedModelFilePath(so, p.optimized_model_path)) ||
        (p.optimized_as_ort &&
         (st = api->AddSessionConfigEntry(so, "session.save_model_format", "ORT")))) {
      api->ReleaseSessionOptions(so);
      free_unopened(s);
      return at_ort_fail(st, AT_ERR_ORT, "setting the optimised-model path");
    }
  }
  st = map ? api->CreateSessionFromArray(at_ort_env(), map, map_len, so, &s->ort)
           : api->CreateSession(at_ort_env(), model_path, so, &s->ort);
  api->ReleaseSessionOptions(so);
  if (st) {
    free_unopened(s);
    char what[1200];
    snprintf(what, sizeof what, "ONNX Runtime could not load model '%s'", model_path);
    return at_ort_fail(st, AT_ERR_MODEL, what);
  }
  at_ort_live_add(AT_ORT_LIVE_SESSION, +1);
  st = api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &s->mem);
  if (st) {
    rc = at_ort_fail(st, AT_ERR_ORT, "creating CPU memory info");
    goto fail;
  }
  OrtAllocator *alloc = NULL;
  if ((st = api->GetAllocatorWithDefaultOptions(&alloc)) ||
      (st = api->SessionGetInputCount(s->ort, &s->info.n_inputs)) ||
      (st = api->SessionGetOutputCount(s->ort, &s->info.n_outputs))) {
    rc = at_ort_fail(st, AT_ERR_MODEL, "reading the model's signature");
    goto fail;
  }
  if (s->info.n_inputs > AT_SESSION_MAX_IO || s->info.n_outputs > AT_SESSION_MAX_IO) {
    rc = at_fail(AT_ERR_UNSUPPORTED, "model '%s' has %zu inputs and %zu outputs; at most %d each are supported",
                 model_path, s->info.n_inputs, s->info.n_outputs, AT_SESSION_MAX_IO);
    goto fail;
  }
  for (size_t i = 0; i < s->info.n_inputs; i++)
    if ((rc = read_value_info(s, 1, i, alloc, &s->inputs[i])) != AT_OK) goto fail;
  for (size_t i = 0; i < s->info.n_outputs; i++)
    if ((rc = read_value_info(s, 0, i, alloc, &s->outputs[i])) != AT_OK) goto fail;
  if ((rc = read_metadata(s, alloc)) != AT_OK) goto fail;
  {
    at_onnx_meta meta;
    read_onnx_header(model_path, &meta);
    s->info.ir_version = meta.ir_version;
    s->info.opset = at_onnx_meta_default_opset(&meta);
    size_t o = intern(s, meta.producer_version);
    if (o == (size_t)-1) {
      rc = at_fail(AT_ERR_NOMEM, "out of memory");
      goto fail;
    }
    s->info.producer_version = OFF(o);
  }
  s->info.inputs = s->inputs;
  s->info.outputs = s->outputs;
  fix_strings(s);
  *out = s;
  return AT_OK;
fail:
  at_session_destroy(s);
  return rc;
}

static at_status check_path(const char *model_path, at_session **out) {
  if (!model_path || !out) return at_fail(AT_ERR_INVALID_ARG, "model_path and out are required");
  *out = NULL;
  at_status rc = at_runtime_init();
  if (rc != AT_OK) return rc;
  struct stat stt;
  if (stat(model_path, &stt) != 0)
    return at_fail(AT_ERR_NOT_FOUND, "model file '%s': %s", model_path, strerror(errno));
  if (!S_ISREG(stt.st_mode))
    return at_fail(AT_ERR_NOT_FOUND, "model '%s' is not a regular file", model_path);
  return AT_OK;
}

at_status at_ort_session_open(const char *model_path, const at_session_params *params,
                              at_session **out) {
  at_status rc = check_path(model_path, out);
  return rc != AT_OK ? rc : session_open(model_path, NULL, 0, params, out);
}

at_status at_ort_session_open_mapped(const char *ort_path, const at_session_params *params,
                                     at_session **out) {
  at_status rc = check_path(ort_path, out);
  if (rc != AT_OK) return rc;
  if (params && params->optimized_model_path)
    return at_fail(AT_ERR_INVALID_ARG, "a mapped ORT-format model is not optimised again");
  void *map = NULL;
  size_t len = 0;
  if ((rc = map_file(ort_path, &map, &len)) != AT_OK) return rc;
  return session_open(ort_path, map, len, params, out);
}

size_t at_ort_session_mapped_bytes(const at_session *s) { return s ? s->map_len : 0; }

void at_session_destroy(at_session *s) {
  if (!s) return;
  const OrtApi *api = at_ort_api();
  if (s->ort) {
    api->ReleaseSession(s->ort);
    at_ort_live_add(AT_ORT_LIVE_SESSION, -1);
  }
  if (s->map) munmap(s->map, s->map_len); /* after ORT let go of the weights */
  if (s->mem) api->ReleaseMemoryInfo(s->mem);
  free(s->strings);
  free(s);
}

const at_model_info *at_session_info(const at_session *s) { return s ? &s->info : NULL; }

void at_ort_session_set_artifact(at_session *s, at_artifact_outcome outcome) {
  if (s) s->artifact = outcome;
}

at_artifact_outcome at_session_artifact_outcome(const at_session *s) {
  return s ? s->artifact : AT_ARTIFACT_OFF;
}

int at_session_input_index(const at_session *s, const char *name) {
  for (size_t i = 0; s && name && i < s->info.n_inputs; i++)
    if (strcmp(s->inputs[i].name, name) == 0) return (int)i;
  return -1;
}

int at_session_output_index(const at_session *s, const char *name) {
  for (size_t i = 0; s && name && i < s->info.n_outputs; i++)
    if (strcmp(s->outputs[i].name, name) == 0) return (int)i;
  return -1;
}

static void shape_str(char *buf, size_t cap, const int64_t *d, size_t n) {
  size_t o = 0;
  o += (size_t)snprintf(buf + o, cap - o, "[");
  for (size_t i = 0; i < n && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)d[i]);
  if (o < cap) snprintf(buf + o, cap - o, "]");
}

static at_status check_input(const at_value_info *want, const at_tensor *t) {
  char a[128], b[128];
  if (t->dtype != want->dtype)
    return at_fail(AT_ERR_SHAPE, "input '%s' has type %s, the model expects %s", want->name,
                   at_dtype_name(t->dtype), at_dtype_name(want->dtype));
  if (t->ndim != want->ndim || t->ndim > AT_MAX_DIMS) {
    shape_str(a, sizeof a, t->shape, t->ndim > AT_MAX_DIMS ? AT_MAX_DIMS : t->ndim);
    shape_str(b, sizeof b, want->dims, want->ndim);
    return at_fail(AT_ERR_SHAPE, "input '%s' has shape %s, the model expects rank %zu %s",
                   want->name, a, want->ndim, b);
  }
  for (size_t d = 0; d < t->ndim; d++) {
    if (t->shape[d] < 0 || (want->dims[d] >= 0 && t->shape[d] != want->dims[d])) {
      shape_str(a, sizeof a, t->shape, t->ndim);
      shape_str(b, sizeof b, want->dims, want->ndim);
      return at_fail(AT_ERR_SHAPE, "input '%s' has shape %s, the model expects %s (-1 = any)",
                     want->name, a, b);
    }
  }
  int ovf = 0;
  size_t n = at_tensor_numel(t, &ovf);
  if (ovf) return at_fail(AT_ERR_SHAPE, "input '%s': element count overflows", want->name);
  if (n > 0 && !t->data) return at_fail(AT_ERR_INVALID_ARG, "input '%s' has no data", want->name);
  if (at_dtype_size(t->dtype) == 0)
    return at_fail(AT_ERR_UNSUPPORTED, "input '%s' has type %s, which anytime cannot pass",
                   want->name, at_dtype_name(t->dtype));
  if (n > SIZE_MAX / at_dtype_size(t->dtype))
    return at_fail(AT_ERR_SHAPE, "input '%s': byte size overflows", want->name);
  return AT_OK;
}

void at_outputs_free(at_outputs *o) {
  if (!o) return;
  const OrtApi *api = at_ort_api();
  for (size_t i = 0; i < o->n; i++)
    if (o->values[i]) {
      api->ReleaseValue(o->values[i]);
      at_ort_live_add(AT_ORT_LIVE_VALUE, -1);
    }
  free(o);
}

at_status at_session_run(at_session *s, const at_tensor *inputs, size_t n_inputs,
                         const char *const *output_names, size_t n_outputs,
                         at_outputs **out) {
  return at_session_run_into(s, inputs, n_inputs, output_names, n_outputs, NULL, out);
}

at_status at_session_run_into(at_session *s, const at_tensor *inputs, size_t n_inputs,
                              const char *const *output_names, size_t n_outputs,
                              const at_tensor *into, at_outputs **out) {
  if (!s || !out || (n_inputs && !inputs))
    return at_fail(AT_ERR_INVALID_ARG, "session, inputs and out are required");
  *out = NULL;
  const OrtApi *api = at_ort_api();
  size_t nin = s->info.n_inputs;
  if (n_inputs != nin)
    return at_fail(AT_ERR_SHAPE, "the model takes %zu inputs, %zu were given", nin, n_inputs);

  /* Map the caller's tensors onto the model's input order and validate. */
  const at_tensor *ordered[AT_SESSION_MAX_IO];
  memset(ordered, 0, sizeof ordered);
  for (size_t i = 0; i < n_inputs; i++) {
    int k = inputs[i].name ? at_session_input_index(s, inputs[i].name) : -1;
    if (k < 0)
      return at_fail(AT_ERR_SHAPE, "the model has no input named '%s'",
                     inputs[i].name ? inputs[i].name : "(null)");
    if (ordered[k]) return at_fail(AT_ERR_SHAPE, "input '%s' was given twice", inputs[i].name);
    at_status rc = check_input(&s->inputs[k], &inputs[i]);
    if (rc != AT_OK) return rc;
    ordered[k] = &inputs[i];
  }

  /* Resolve the requested outputs. */
  size_t nout = (output_names && n_outputs) ? n_outputs : s->info.n_outputs;
  if (nout > AT_SESSION_MAX_IO)
    return at_fail(AT_ERR_INVALID_ARG, "too many outputs requested (%zu)", nout);
  const char *onames[AT_SESSION_MAX_IO];
  for (size_t i = 0; i < nout; i++) {
    if (output_names && n_outputs) {
      int k = output_names[i] ? at_session_output_index(s, output_names[i]) : -1;
      if (k < 0)
        return at_fail(AT_ERR_NOT_FOUND, "the model has no output named '%s'",
                       output_names[i] ? output_names[i] : "(null)");
      onames[i] = s->output_names[k];
    } else {
      onames[i] = s->output_names[i];
    }
  }

  at_outputs *o = calloc(1, sizeof *o + nout * (sizeof(OrtValue *) + sizeof(at_tensor)));
  if (!o) return at_fail(AT_ERR_NOMEM, "out of memory");
  o->values = (OrtValue **)(o + 1);
  o->views = (at_tensor *)(o->values + nout);

  OrtValue *in_vals[AT_SESSION_MAX_IO];
  memset(in_vals, 0, sizeof in_vals);
  at_status rc = AT_OK;
  OrtStatus *st = NULL;
  /* outputs the caller gives memory for: ONNX Runtime writes there */
  for (size_t i = 0; into && i < nout; i++) {
    const at_tensor *t = &into[i];
    if (!t->data) continue;
    st = api->CreateTensorWithDataAsOrtValue(s->mem, t->data,
                                             at_tensor_numel(t, NULL) * at_dtype_size(t->dtype),
                                             t->shape, t->ndim, to_ort_type(t->dtype),
                                             &o->values[i]);
    if (st) {
      rc = at_ort_fail(st, AT_ERR_ORT, "wrapping an output buffer");
      o->values[i] = NULL;
      for (size_t k = 0; k < i; k++)
        if (o->values[k]) at_ort_live_add(AT_ORT_LIVE_VALUE, +1);
      goto done;
    }
  }
  for (size_t k = 0; k < nin; k++) {
    const at_tensor *t = ordered[k];
    size_t bytes = at_tensor_numel(t, NULL) * at_dtype_size(t->dtype);
    static int64_t dummy; /* ORT wants a non-NULL pointer even for 0 elements */
    st = api->CreateTensorWithDataAsOrtValue(s->mem, t->data ? t->data : &dummy, bytes,
                                             t->shape, t->ndim, to_ort_type(t->dtype),
                                             &in_vals[k]);
    if (st) {
      rc = at_ort_fail(st, AT_ERR_ORT, "wrapping an input tensor");
      goto done;
    }
    at_ort_live_add(AT_ORT_LIVE_VALUE, +1);
  }
  st = api->Run(s->ort, NULL, s->input_names, (const OrtValue *const *)in_vals, nin, onames,
                nout, o->values);
  for (size_t i = 0; i < nout; i++) /* what Run made or was given, if anything, is ours now */
    if (o->values[i]) at_ort_live_add(AT_ORT_LIVE_VALUE, +1);
  if (st) {
    rc = at_ort_fail(st, AT_ERR_ORT, "ONNX Runtime Run failed");
    goto done;
  }
  o->n = nout;
  for (size_t i = 0; i < nout; i++) {
    OrtTensorTypeAndShapeInfo *tsi = NULL;
    at_tensor *v = &o->views[i];
    v->name = onames[i];
    size_t nd = 0;
    ONNXTensorElementDataType et;
    if ((st = api->GetTensorTypeAndShape(o->values[i], &tsi))) {
      rc = at_ort_fail(st, AT_ERR_ORT, "reading an output tensor");
      goto done;
    }
    if ((st = api->GetTensorElementType(tsi, &et)) || (st = api->GetDimensionsCount(tsi, &nd)) ||
        nd > AT_MAX_DIMS || (st = api->GetDimensions(tsi, v->shape, nd))) {
      api->ReleaseTensorTypeAndShapeInfo(tsi);
      rc = st ? at_ort_fail(st, AT_ERR_ORT, "reading an output tensor")
              : at_fail(AT_ERR_UNSUPPORTED, "output '%s' has too many dimensions", onames[i]);
      goto done;
    }
    api->ReleaseTensorTypeAndShapeInfo(tsi);
    v->ndim = nd;
    v->dtype = from_ort_type(et);
    if ((st = api->GetTensorMutableData(o->values[i], &v->data))) {
      rc = at_ort_fail(st, AT_ERR_ORT, "reading an output tensor");
      goto done;
    }
  }
done:
  for (size_t k = 0; k < nin; k++)
    if (in_vals[k]) {
      api->ReleaseValue(in_vals[k]);
      at_ort_live_add(AT_ORT_LIVE_VALUE, -1);
    }
  if (rc != AT_OK) {
    o->n = nout; /* release whatever Run produced */
    at_outputs_free(o);
    return rc;
  }
  *out = o;
  return AT_OK;
}

size_t at_outputs_count(const at_outputs *o) { return o ? o->n : 0; }

at_status at_outputs_get(const at_outputs *o, size_t i, at_tensor *view) {
  if (!o || !view || i >= o->n)
    return at_fail(AT_ERR_INVALID_ARG, "output index %zu out of range", i);
  *view = o->views[i];
  return AT_OK;
}
