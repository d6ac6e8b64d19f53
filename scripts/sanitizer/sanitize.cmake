# Sanitizer builds (scripts/sanitize): TIDE_SANITIZE=asan (AddressSanitizer + UndefinedBehavior-
# Sanitizer) or tsan (ThreadSanitizer). Every target is compiled and linked with the flags, and
# every binary carries the default options of default_options.cc, so that processes started with
# a scrubbed environment (a container's AM and executors) still stop on their first finding and
# write their report to TIDE_SANITIZER_REPORTS, where scripts/sanitize looks for them.
if(TIDE_SANITIZE STREQUAL "asan")
  set(tide_sanitize_flags -fsanitize=address,undefined -fno-sanitize-recover=all
                          -fno-omit-frame-pointer)
  # GCC's instrumentation makes -Wmaybe-uninitialized report std::regex's internals (a known
  # false positive at -O1 with -fsanitize=address); the plain build keeps the warning.
  add_compile_options(-Wno-maybe-uninitialized)
elseif(TIDE_SANITIZE STREQUAL "tsan")
  set(tide_sanitize_flags -fsanitize=thread)
else()
  message(FATAL_ERROR "TIDE_SANITIZE='${TIDE_SANITIZE}': expected asan or tsan")
endif()
add_compile_options(${tide_sanitize_flags})
add_link_options(${tide_sanitize_flags})
set(TIDE_SANITIZER_REPORTS "${CMAKE_BINARY_DIR}/sanitizer-reports"
    CACHE PATH "Where every sanitized process writes its report (<dir>/<kind>.<pid>)")
add_library(tide_sanitizer_defaults OBJECT ${CMAKE_CURRENT_LIST_DIR}/default_options.cc)
target_compile_definitions(tide_sanitizer_defaults PRIVATE
  TIDE_SANITIZER_LOG="${TIDE_SANITIZER_REPORTS}/${TIDE_SANITIZE}"
  TIDE_SANITIZER_DIR="${CMAKE_CURRENT_LIST_DIR}")
# Every target defined after this line links the defaults (an executable gets the object itself).
link_libraries(tide_sanitizer_defaults)
