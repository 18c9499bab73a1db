/* anytime/api.h — the mark of the public API. Every function declared in
 * include/anytime/ carries AT_API: the library is compiled with hidden
 * visibility (CMakeLists.txt), so libanytime.so exports exactly these and
 * nothing of src/'s internal functions (docs/architecture.md, "Public and
 * internal"; tests/integration/exports.sh holds it with nm). */
#ifndef ANYTIME_API_H
#define ANYTIME_API_H

#if defined(__GNUC__) || defined(__clang__)
#define AT_API __attribute__((visibility("default")))
#else
#define AT_API
#endif

#endif /* ANYTIME_API_H */
