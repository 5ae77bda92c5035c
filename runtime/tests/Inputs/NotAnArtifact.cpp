// A shared library that exports neither dsc_artifact_info nor
// dsc_artifact_step: dsc-run must refuse it with a message, not crash.
extern "C" int not_an_artifact(void) { return 42; }
