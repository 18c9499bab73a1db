/* cmake/ort_probe.c — run at configure time by cmake/OrtSdk.cmake: opens the
 * ONNX Runtime library given as argv[1] and prints its release
 * (GetVersionString). Uses dlopen so it works whatever release the file is. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  const void *(*GetApi)(uint32_t version);
  const char *(*GetVersionString)(void);
} probe_api_base;

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("ERROR %s\n", dlerror());
    return 1;
  }
  const probe_api_base *(*get)(void);
  *(void **)&get = dlsym(h, "OrtGetApiBase");
  if (!get) {
    printf("ERROR no OrtGetApiBase in %s\n", argv[1]);
    return 1;
  }
  printf("RELEASE %s\n", get()->GetVersionString());
  return 0;
}
