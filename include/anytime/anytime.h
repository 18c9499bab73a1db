/* anytime/anytime.h — umbrella header for the anytime C API.
 *
 * Include this to get everything: status codes, logging, runtime/version
 * lock, tensors, sessions and the engine. Each sub-header documents the
 * ownership and thread-safety of its functions.
 */
#ifndef ANYTIME_ANYTIME_H
#define ANYTIME_ANYTIME_H

#include "anytime/chat.h"
#include "anytime/clock.h"
#include "anytime/decode.h"
#include "anytime/engine.h"
#include "anytime/generate.h"
#include "anytime/lm.h"
#include "anytime/log.h"
#include "anytime/model.h"
#include "anytime/onnx_meta.h"
#include "anytime/plan.h"
#include "anytime/profile.h"
#include "anytime/rng.h"
#include "anytime/runtime.h"
#include "anytime/session.h"
#include "anytime/status.h"
#include "anytime/tensor.h"
#include "anytime/tokenizer.h"

#endif /* ANYTIME_ANYTIME_H */
