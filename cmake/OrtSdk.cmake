# cmake/OrtSdk.cmake — resolve the ONNX Runtime C SDK and enforce the version
# lock at configure time.
#
# The release is written down once, in cmake/ort-version.txt. Without
# -DORT_ROOT, the pinned SDK (the library of ORT_VERSION with the C headers
# of ORT_HEADERS_VERSION) is fetched by scripts/fetch-ort.sh (sha256-checked)
# into $ANYTIME_ORT_CACHE (default ~/.cache/anytime/ort); the script names the
# directory. With -DORT_ROOT=DIR any SDK laid out as
# DIR/include/onnxruntime_c_api.h (or DIR/include/onnxruntime/...) and
# DIR/lib/libonnxruntime.so* is used.
#
# Configure fails unless the header's ORT_API_VERSION is at most the minor
# number of the library's own release string (read by running
# cmake/ort_probe.c against the library): ONNX Runtime's C API only appends,
# so an older header is served by a newer library, never the reverse.
# Results: ORT_INCLUDE_DIR, ORT_LIBRARY, AT_ORT_RELEASE, AT_ORT_API_VERSION

file(STRINGS "${PROJECT_SOURCE_DIR}/cmake/ort-version.txt" _ort_pin REGEX "^ORT_VERSION=")
string(REGEX REPLACE "^ORT_VERSION=" "" AT_ORT_PINNED_RELEASE "${_ort_pin}")

if(NOT ORT_ROOT)
  execute_process(COMMAND bash "${PROJECT_SOURCE_DIR}/scripts/fetch-ort.sh" --print-root
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _root
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0 OR NOT EXISTS "${_root}/.complete")
    message(FATAL_ERROR "could not fetch ONNX Runtime ${AT_ORT_PINNED_RELEASE} "
                        "(scripts/fetch-ort.sh exited ${_rc}); pass -DORT_ROOT=DIR to use an SDK you have")
  endif()
  set(ORT_ROOT "${_root}" CACHE PATH "ONNX Runtime C SDK root (include/ and lib/)")
endif()

find_path(ORT_INCLUDE_DIR onnxruntime_c_api.h
          PATHS "${ORT_ROOT}/include" "${ORT_ROOT}/include/onnxruntime"
          NO_DEFAULT_PATH)
find_library(ORT_LIBRARY NAMES onnxruntime libonnxruntime.so.1
             PATHS "${ORT_ROOT}/lib" "${ORT_ROOT}/lib64" NO_DEFAULT_PATH)
if(NOT ORT_INCLUDE_DIR OR NOT ORT_LIBRARY)
  message(FATAL_ERROR "ORT_ROOT=${ORT_ROOT} is not an ONNX Runtime C SDK: need "
                      "include/onnxruntime_c_api.h (found: ${ORT_INCLUDE_DIR}) and "
                      "lib/libonnxruntime.so (found: ${ORT_LIBRARY})")
endif()
get_filename_component(ORT_LIBRARY "${ORT_LIBRARY}" REALPATH)

file(STRINGS "${ORT_INCLUDE_DIR}/onnxruntime_c_api.h" _api_line
     REGEX "^#define ORT_API_VERSION [0-9]+")
string(REGEX REPLACE "^#define ORT_API_VERSION ([0-9]+).*" "\\1" AT_ORT_API_VERSION "${_api_line}")
if(NOT AT_ORT_API_VERSION)
  message(FATAL_ERROR "cannot read ORT_API_VERSION from ${ORT_INCLUDE_DIR}/onnxruntime_c_api.h")
endif()

try_run(_probe_run _probe_compile
        "${CMAKE_BINARY_DIR}/ort_probe" "${PROJECT_SOURCE_DIR}/cmake/ort_probe.c"
        LINK_LIBRARIES ${CMAKE_DL_LIBS}
        COMPILE_OUTPUT_VARIABLE _probe_cout
        RUN_OUTPUT_VARIABLE _probe_out
        ARGS "${ORT_LIBRARY}")
if(NOT _probe_compile)
  message(FATAL_ERROR "could not build the ONNX Runtime probe:\n${_probe_cout}")
endif()
if(NOT _probe_out MATCHES "RELEASE ([0-9]+)\\.([0-9]+)\\.([0-9]+)")
  message(FATAL_ERROR "could not read the release of ${ORT_LIBRARY}: ${_probe_out}")
endif()
set(AT_ORT_RELEASE "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}.${CMAKE_MATCH_3}")
set(_lib_minor "${CMAKE_MATCH_2}")

if(AT_ORT_API_VERSION GREATER _lib_minor)
  message(FATAL_ERROR
    "ONNX Runtime header/library mismatch: ${ORT_INCLUDE_DIR}/onnxruntime_c_api.h has "
    "ORT_API_VERSION ${AT_ORT_API_VERSION}, but ${ORT_LIBRARY} is release ${AT_ORT_RELEASE} "
    "(API ${_lib_minor}). A header newer than the library cannot be served; use headers "
    "of that release or an older one.")
endif()
if(NOT AT_ORT_RELEASE STREQUAL AT_ORT_PINNED_RELEASE)
  message(WARNING "Building against ONNX Runtime ${AT_ORT_RELEASE} from ORT_ROOT=${ORT_ROOT}; "
                  "anytime is pinned to ${AT_ORT_PINNED_RELEASE} (cmake/ort-version.txt) and "
                  "tested only with that release.")
endif()
message(STATUS "ONNX Runtime ${AT_ORT_RELEASE} (API ${AT_ORT_API_VERSION}): ${ORT_LIBRARY}")
