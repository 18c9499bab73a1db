/* src/cli/cmd_info.c — `anytime info MODEL.onnx`: load a model with ONNX
 * Runtime and print its inputs and outputs (with symbolic dimensions), opset,
 * IR version and producer. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void print_values(const char *title, const at_value_info *v, size_t n) {
  printf("%s:\n", title);
  for (size_t i = 0; i < n; i++) {
    printf("  %-24s %-6s [", v[i].name, at_dtype_name(v[i].dtype));
    for (size_t d = 0; d < v[i].ndim; d++) {
      if (d) printf(", ");
      if (v[i].dims[d] >= 0) printf("%lld", (long long)v[i].dims[d]);
      else if (v[i].dim_names[d][0]) printf("%s", v[i].dim_names[d]);
      else printf("?");
    }
    printf("]\n");
  }
}

int at_cli_info(int argc, char **argv) {
  if (cli_wants_help(argc, argv) || argc != 2) {
    FILE *f = argc == 2 || cli_wants_help(argc, argv) ? stdout : stderr;
    fprintf(f, "usage: anytime info MODEL.onnx\n\n"
               "Loads the model with ONNX Runtime (optimisation off, so loading is quick)\n"
               "and prints its inputs and outputs with element types and shapes (named\n"
               "symbolic dimensions such as 'batch' where the model declares them), the\n"
               "default-domain opset, the ONNX IR version and the producer.\n");
    return cli_wants_help(argc, argv) ? AT_EXIT_OK : AT_EXIT_USAGE;
  }
  at_session_params p = at_session_default_params();
  p.opt_level = AT_OPT_DISABLE;
  at_session *s = NULL;
  at_status st = at_session_create(argv[1], &p, &s);
  if (st != AT_OK) return tools_report("info", st);
  const at_model_info *mi = at_session_info(s);
  printf("model:     %s\n", argv[1]);
  printf("producer:  %s %s\n", mi->producer_name[0] ? mi->producer_name : "(none)",
         mi->producer_version);
  if (mi->graph_name[0]) printf("graph:     %s\n", mi->graph_name);
  if (mi->opset) printf("opset:     %lld\n", (long long)mi->opset);
  else printf("opset:     unknown (not an .onnx protobuf)\n");
  if (mi->ir_version) printf("ir:        %lld\n", (long long)mi->ir_version);
  print_values("inputs", mi->inputs, mi->n_inputs);
  print_values("outputs", mi->outputs, mi->n_outputs);
  at_session_destroy(s);
  return AT_EXIT_OK;
}
