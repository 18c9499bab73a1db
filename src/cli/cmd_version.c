/* src/cli/cmd_version.c — `anytime version`: anytime's version, the ORT API
 * version compiled in, the loaded library's release and path, the malloc
 * the executable runs on, and the execution providers the library offers.
 * Fails (exit 3) when the runtime check refuses the library. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int at_cli_version(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: anytime version [--json]\n\n"
           "Loads ONNX Runtime exactly as every other command does and prints:\n"
           "  anytime's version, the ORT header API version it was compiled with,\n"
           "  the ORT release it was built for, the loaded library's release and path,\n"
           "  the malloc the executable runs on (mimalloc unless built with\n"
           "  -DAT_MIMALLOC=OFF or with sanitizers), and the execution providers that\n"
           "  library offers.\n"
           "Exits 3 if the library cannot be loaded or is a different release\n"
           "(see ANYTIME_ORT_LIB and ANYTIME_ALLOW_ORT_MISMATCH in `anytime --help`).\n");
    return AT_EXIT_OK;
  }
  bool json = argc > 1 && strcmp(argv[1], "--json") == 0;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--json") != 0) {
      fprintf(stderr, "anytime version: unknown option '%s'\n", argv[i]);
      return AT_EXIT_USAGE;
    }
  at_version_info v;
  at_status s = at_runtime_version_info(&v);
  if (s != AT_OK) return tools_report("version", s);
  if (json) {
    printf("{\"anytime\":\"%s\",\"ort_api_version\":%d,\"ort_compiled_release\":\"%s\","
           "\"ort_library_release\":\"%s\",\"ort_library_path\":\"%s\",\"mismatch\":%s,"
           "\"allocator\":\"%s\",\"execution_providers\":[",
           v.anytime_version, v.header_api_version, v.compiled_release, v.library_release,
           v.library_path, v.mismatch ? "true" : "false", cli_allocator());
    for (int i = 0; i < v.n_providers; i++) printf("%s\"%s\"", i ? "," : "", v.providers[i]);
    printf("]}\n");
    return AT_EXIT_OK;
  }
  printf("anytime %s\n", v.anytime_version);
  printf("ONNX Runtime header API version: %d\n", v.header_api_version);
  printf("ONNX Runtime built for:          %s\n", v.compiled_release);
  printf("ONNX Runtime library:            %s%s (%s)\n", v.library_release,
         v.mismatch ? " [MISMATCH ALLOWED]" : "", v.library_path);
  printf("malloc:                          %s\n", cli_allocator());
  printf("execution providers:            ");
  for (int i = 0; i < v.n_providers; i++) printf(" %s", v.providers[i]);
  printf("\n");
  return AT_EXIT_OK;
}
