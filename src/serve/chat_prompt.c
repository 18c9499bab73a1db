/* src/serve/chat_prompt.c — rendering chat messages into the generator's
 * prompt. Interim: the template renderer is not in yet, so the chat route
 * refuses with a clear message. */
#include <stdio.h>

#include "serve/serve_internal.h"

int serve_chat_prompt(at_server *s, json_t *messages, char **text, size_t *len, char *err,
                      size_t cap) {
  (void)s;
  (void)messages;
  *text = NULL;
  *len = 0;
  snprintf(err, cap, "chat templates are not supported by this build");
  return 400;
}
