/* src/serve/token_input.h — OpenAI's token-array input to /v1/embeddings:
 * "input" as one list of token ids (one input) or a list of such lists,
 * which the OpenAI spec allows and LangChain's Python OpenAIEmbeddings
 * sends by default. The ids are the served model's own vocabulary and go
 * to the graph as given (no special tokens added), as TEI and vLLM read
 * them. Pure: no server state; any thread. Internal to src/serve. */
#ifndef ANYTIME_SERVE_TOKEN_INPUT_H
#define ANYTIME_SERVE_TOKEN_INPUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tok_input {
  size_t n;      /* inputs */
  int64_t *ids;  /* every input's ids, one after another (owned) */
  size_t *lens;  /* n lengths (in the same allocation as ids) */
} tok_input;

/* Read `in` (the body's "input") as token arrays. Returns
 *   -1   when it is not token input (a string, or a list whose first
 *        element is a string or a list starting with one): read it as
 *        text; *out is left empty;
 *    0   *out filled (free with tok_input_free): 1..max_inputs inputs,
 *        each 1.. ids, every id an integer in [0, vocab);
 *  400   a malformed list (a mix of ids and other values, an empty input,
 *        an id outside [0, vocab)), the message in err;
 *  413   more than max_inputs inputs, the message in err;
 *  500   out of memory. */
int tok_input_parse(json_t *in, int64_t vocab, size_t max_inputs, tok_input *out, char *err,
                    size_t cap);
void tok_input_free(tok_input *t);

#endif
