/* src/serve/request_json.h — request-body helpers shared by the routes
 * (see request_json.c). On failure each has already sent a 4xx answer and
 * stored MHD's result in *res. Internal to src/serve. */
#ifndef ANYTIME_SERVE_REQUEST_JSON_H
#define ANYTIME_SERVE_REQUEST_JSON_H

#include "serve/serve_internal.h"

typedef struct rj_texts_t {
  size_t n;
  bool single;          /* the member was a bare string */
  const char **texts;   /* point into the json_t; valid while it lives */
  size_t *lens;
} rj_texts_t;

json_t *rj_parse(req_ctx *r, enum MHD_Result *res);
int rj_texts(req_ctx *r, json_t *body, const char *key, rj_texts_t *out, enum MHD_Result *res);
void rj_texts_free(rj_texts_t *t);
int rj_bool(req_ctx *r, json_t *body, const char *key, bool dflt, bool *out, enum MHD_Result *res);
/* The request's x-deadline-ms header in seconds: 0 if absent, -1 if invalid. */
double rj_deadline_s(req_ctx *r);



/* Shared by the routes (routes_tei.c). */
served_model *serve_pick_model(req_ctx *r, json_t *body, serve_task task, enum MHD_Result *res);
void serve_l2_normalize(float *v, size_t n);
void serve_softmax(const float *logits, float *p, size_t n);
#endif
