# -*- Python -*-
# lit configuration of dsc's test suite: FileCheck tests of the dialect and
# passes, bad-input tests of the tools, and a libFuzzer smoke run.

import os
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "DSC"

# Each test's MPI jobs keep OpenMPI's session files beside its %t
# (Inputs/dsc_lit_format.py says why).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from dsc_lit_format import ShTestWithOwnMpiSessionDir
config.test_format = ShTestWithOwnMpiSessionDir(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
# e2e/ is a suite of its own (e2e/lit.cfg.py), run by ctest's `e2e` label.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "e2e"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dsc_obj_root, "test")

config.python_executable = sys.executable
config.substitutions.append(("%dsc_src_root", config.dsc_src_root))
# `not` accepts any non-zero status; bad input must exit with exactly 1.
config.substitutions.append(
    ("%expect_exit",
     f"{sys.executable} {os.path.join(config.test_source_root, 'Inputs', 'expect_exit.py')}"))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# The exporter and golden numbers need Debian's python3-torch, which
# scripts/setup.sh always installs; tests that use it say REQUIRES: torch.
torch_python = "/usr/bin/python3"
if subprocess.run([torch_python, "-c", "import torch, numpy"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("torch")
# torch 2.x (the GPU machines): F.scaled_dot_product_attention exists.
if subprocess.run([torch_python, "-c", "import torch.nn.functional as F; "
                   "F.scaled_dot_product_attention"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("torch2")
config.substitutions.append(
    ("%torch_python",
     f"env PYTHONPATH={os.path.join(config.dsc_src_root, 'python')} {torch_python}"))
# mpirun as root (CI, containers) and with more ranks than cores.
config.substitutions.append(("%mpirun", "mpirun --allow-run-as-root --oversubscribe"))
config.environment["DSC_COLLECTIVE_TIMEOUT"] = "120"
# dsc-compile's cache of artifacts: in the build tree, never the home
# directory's.
config.environment["DSC_CACHE_DIR"] = os.path.join(config.dsc_obj_root, "test", "dsc-cache")
# ccache (4.x, for --print-stats): dsc-compile's units must hit it.
if shutil.which("ccache") and subprocess.run(
        ["ccache", "--print-stats"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("ccache")
config.substitutions.append(("%models", os.path.join(config.dsc_src_root, "examples", "models")))

# nvcc from the CUDA toolkit: CUDA artifacts must build on machines without
# a GPU (they cannot run here).
if os.path.exists("/usr/local/cuda/bin/nvcc"):
    config.available_features.add("nvcc")

# A CPU with AVX2: artifacts compiled with dsc-compile --cpu-isa=avx2 run.
try:
    with open("/proc/cpuinfo") as f:
        if any(line.startswith("flags") and " avx2" in line for line in f):
            config.available_features.add("avx2")
except OSError:
    pass

tools = ["dsc-opt", "dsc-translate", "dsc-compile", "dsc-run", "dsc-ckpt", "dsc-plot",
         "dsc-train"]
if config.dsc_has_fuzzer:
    config.available_features.add("libfuzzer")
    tools.append("dsc-parse-fuzzer")
llvm_config.add_tool_substitutions(tools, [config.dsc_tools_dir])
