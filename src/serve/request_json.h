/* src/serve/request_json.h — request-body helpers shared by the routes
 * (see request_json.c). On failure each has already sent a 4xx answer and
 * stored MHD's result in *res. Internal to src/serve. */
#ifndef ANYTIME_SERVE_REQUEST_JSON_H
#define ANYTIME_SERVE_REQUEST_JSON_H

#include "serve/req_parse.h"
#include "serve/serve_internal.h"

json_t *rj_parse(req_ctx *r, enum MHD_Result *res);
/* rj_texts_get() and rj_bool_get() (req_parse.h) with the server's limit,
 * sending the refusal. */
int rj_texts(req_ctx *r, json_t *body, const char *key, rj_texts_t *out, enum MHD_Result *res);
int rj_bool(req_ctx *r, json_t *body, const char *key, bool dflt, bool *out, enum MHD_Result *res);
/* The request's x-deadline-ms header in seconds: 0 if absent, -1 if invalid. */
double rj_deadline_s(req_ctx *r);

/* Scan a JSON object body without building anything: the number of texts
 * in its top-level member `key` (a string: 1, an array: its elements) and
 * the raw span of a string "model" member (NULL if absent or null).
 * Returns 0 when the body is an object the scan could follow with `key`
 * present and non-empty; -1 otherwise (malformed, a duplicate or escaped
 * member name, an escaped model name, nesting deeper than 64, a
 * "priority" member, whose class the planner must see): the caller
 * then parses first. The count is not a validation: the parse checks the
 * body once admitted. Pure; any thread. */
int rj_prescan(const char *body, size_t len, const char *key, size_t *n, const char **model,
               size_t *model_len);
/* Admission before parsing, for text routes whose texts are in `key`: from
 * rj_prescan() and the x-deadline-ms header, the model the route would
 * pick asks its planner. Returns true when the request was refused (the
 * 429/422 is sent, *res says how): the body was never parsed. Returns
 * false otherwise — admitted (r->adm holds the texts; the text job checks
 * the parsed count against them) or not decided (the scan could not
 * follow the body, or it names a model that is not there): parse as usual. */
bool rj_predecide(req_ctx *r, serve_task task, const char *key, enum MHD_Result *res);



/* The model a request names in its "model" member, which must have
 * `task`; without one, the first served model with `task`. NULL: *res
 * holds the 400/404 sent. */
served_model *serve_pick_model(req_ctx *r, json_t *body, serve_task task, enum MHD_Result *res);
#endif
