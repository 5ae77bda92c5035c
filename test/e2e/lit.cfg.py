# -*- Python -*-
# lit configuration of dsc's end-to-end suite: export, dsc-compile and
# dsc-run on 1, 2 and 4 CPU ranks against PyTorch (dsc.golden), one scenario
# per file. Its own suite (the fast one in test/ excludes this directory):
# `lit build/test/e2e`, or ctest's `e2e` label.
#
# The data, exports and golden runs that several files compare with are made
# once into build/test/e2e-inputs (%e2e_inputs) by Inputs/make_inputs.py:
# ctest's e2e-inputs fixture runs it first, and this config runs it too (a
# no-op when its stamp is current) so that lit alone works.
#
# --param openblas_coretype=other (ctest's e2e-coretype label) runs the files
# with OpenBLAS forced to another core type than this machine's (Inputs/
# openblas_coretype.py picks one the CPU can execute): the same tests must
# pass whichever kernels round the GEMMs. Its outputs go to
# build/test/e2e-coretype so both runs can proceed at once.

import os
import subprocess
import sys

lit_config.load_config(config, os.path.join(config.dsc_src_root, "test", "lit.cfg.py"))

config.name = "DSC-e2e"
config.suffixes = [".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dsc_obj_root, "test", "e2e")

inputs = os.path.join(config.dsc_obj_root, "test", "e2e-inputs")
if subprocess.run([sys.executable, os.path.join(config.test_source_root, "Inputs",
                                                "make_inputs.py"), inputs]).returncode:
    lit_config.fatal(f"the e2e inputs could not be made in {inputs}")
config.substitutions.append(("%e2e_inputs", inputs))

# dsc-compile through Inputs/compile_shared.py: files that build the same
# artifact (the same model, options and compiler) share one compilation,
# kept in build/test/e2e-artifacts under a hash of what it is made from.
artifacts = os.path.join(config.dsc_obj_root, "test", "e2e-artifacts")
for i, (pattern, replacement) in enumerate(config.substitutions):
    if isinstance(replacement, str) and replacement.endswith("/dsc-compile"):
        shared = os.path.join(config.test_source_root, "Inputs", "compile_shared.py")
        config.substitutions[i] = (pattern, f"{sys.executable} {shared} {replacement} {artifacts}")

coretype = lit_config.params.get("openblas_coretype")
if coretype:
    helper = os.path.join(config.test_source_root, "Inputs", "openblas_coretype.py")
    chosen = subprocess.run([sys.executable, helper, coretype], capture_output=True, text=True)
    if chosen.returncode:
        lit_config.fatal(chosen.stderr.strip())
    forced, note = chosen.stdout.split("\n", 1)
    lit_config.note(note.strip())
    config.environment["OPENBLAS_CORETYPE"] = forced
    config.test_exec_root = os.path.join(config.dsc_obj_root, "test", "e2e-coretype")
