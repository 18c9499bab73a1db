/* src/text/tk_inputs.c — encodings to a model's input tensors: the one
 * place the CLI's direct paths (`run`, `eval`) turn tokeniser output into
 * the named, padded, typed tensors an encoder graph reads. The serving
 * path pads ids it already holds as int64 (src/engine/batcher.c), and the
 * plain timing paths borrow int64 buffers (at_text_inputs, tensor.h). Pure;
 * any thread. */
#include <string.h>

#include "anytime/tensor.h"
#include "anytime/tokenizer.h"
#include "core/internal.h"

at_status at_encodings_to_inputs(const at_model_info *mi, const at_encoding *enc, size_t n,
                                 size_t L, int32_t pad_id, int64_t *buf, at_tensor *out,
                                 size_t *n_out) {
  if (!mi || (!enc && n) || !buf || !out || !n_out || !n || !L)
    return at_fail(AT_ERR_INVALID_ARG, "encodings to inputs: NULL argument or an empty batch");
  *n_out = 0;
  bool have_ids = false;
  for (size_t i = 0; i < mi->n_inputs; i++) {
    const at_value_info *v = &mi->inputs[i];
    int k = !strcmp(v->name, "input_ids")        ? 0
            : !strcmp(v->name, "attention_mask") ? 1
            : !strcmp(v->name, "token_type_ids") ? 2
                                                 : -1;
    if (k < 0)
      return at_fail(AT_ERR_UNSUPPORTED, "the model wants an input '%s' that text cannot provide",
                     v->name);
    if (v->dtype != AT_DTYPE_INT64 && v->dtype != AT_DTYPE_INT32)
      return at_fail(AT_ERR_UNSUPPORTED, "input '%s' is %s; INT64 or INT32 expected", v->name,
                     at_dtype_name(v->dtype));
    if (*n_out == 3)
      return at_fail(AT_ERR_UNSUPPORTED, "the model names input '%s' twice", v->name);
    have_ids |= k == 0;
    int64_t *d64 = buf + (size_t)k * n * L;
    int32_t *d32 = (int32_t *)d64;
    for (size_t r = 0; r < n; r++) {
      const int32_t *src = k == 0 ? enc[r].ids : k == 1 ? enc[r].attention_mask : enc[r].type_ids;
      for (size_t j = 0; j < L; j++) {
        int64_t val = j < enc[r].n ? (src ? src[j] : k == 1) : k == 0 ? pad_id : 0;
        if (v->dtype == AT_DTYPE_INT64) d64[r * L + j] = val;
        else d32[r * L + j] = (int32_t)val;
      }
    }
    out[(*n_out)++] = (at_tensor){.name = v->name, .dtype = v->dtype, .ndim = 2,
                                  .shape = {(int64_t)n, (int64_t)L}, .data = d64};
  }
  if (!have_ids) return at_fail(AT_ERR_UNSUPPORTED, "the model has no 'input_ids' input");
  return AT_OK;
}
