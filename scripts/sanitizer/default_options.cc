// Default sanitizer options compiled into every binary of a sanitizer build (sanitize.cmake).
// The runtimes read them before the environment's ASAN_OPTIONS / UBSAN_OPTIONS / TSAN_OPTIONS /
// LSAN_OPTIONS, which still override them; they matter for processes whose environment is not
// inherited (tide-nm gives a container only the variables its request names), so that an AM or
// executor in a container stops on its first finding and leaves its report where
// scripts/sanitize looks (TIDE_SANITIZER_LOG.<pid>).

extern "C" {

const char* __asan_default_options() {
  return "detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0"
         ":log_path=" TIDE_SANITIZER_LOG;
}

const char* __lsan_default_options() {
  return "suppressions=" TIDE_SANITIZER_DIR "/lsan.supp";
}

const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1:log_path=" TIDE_SANITIZER_LOG;
}

const char* __tsan_default_options() {
  return "halt_on_error=1:exitcode=66:second_deadlock_stack=1:log_path=" TIDE_SANITIZER_LOG
         ":suppressions=" TIDE_SANITIZER_DIR "/tsan.supp";
}

}  // extern "C"
