#!/usr/bin/env python3
"""dsc-compile for the e2e suite, each distinct artifact compiled once.

Usage: compile_shared.py DSC_COMPILE CACHE_DIR MODEL.mlir [dsc-compile options] -o OUT

Many scenario files train the same model with the same options (the
stage-0 run that ZeRO stages are compared with, for one); compiling the
generated C++ is most of an e2e file's time. This runs DSC_COMPILE once per
distinct input and copies the artifact (and what dsc-compile printed) from
CACHE_DIR afterwards. The key is a hash of everything the artifact is made
from: the model file's bytes, the options, and the bytes of dsc-compile,
dsc-opt, dsc-translate, the artifact flags and the runtime headers the
generated code includes; the compilation is deterministic (the same inputs
give the same bytes), so a copy is what a compilation would write. A lock
per key lets concurrent files wait for one compilation. With --keep (the
caller wants the intermediate files), --dsc-report-file (a second output)
or when the key's inputs cannot be read, it runs DSC_COMPILE as it is.
"""
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys


def hash_files(h, paths):
    for path in paths:
        h.update(path.encode())
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)


def made_from(dsc_compile):
    """The files besides the model that an artifact depends on."""
    bin_dir = os.path.dirname(dsc_compile)
    paths = [dsc_compile, os.path.join(bin_dir, "dsc-opt"),
             os.path.join(bin_dir, "dsc-translate")]
    text = open(dsc_compile).read()
    for name in ("ARTIFACT_FLAGS_FILE", "RUNTIME_INCLUDE"):
        m = re.search(rf'^{name} = "([^"]*)"', text, re.M)
        if not m:
            return None
        if os.path.isdir(m.group(1)):
            for root, dirs, files in os.walk(m.group(1)):
                dirs.sort()
                paths += [os.path.join(root, f) for f in sorted(files)]
        elif os.path.isfile(m.group(1)):
            paths.append(m.group(1))
    return paths


def main():
    dsc_compile, cache, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    plain = [dsc_compile] + args
    side_outputs = ("--keep", "--dsc-report-file")
    if "-o" not in args or any(a.split("=")[0] in side_outputs for a in args):
        return subprocess.run(plain).returncode
    i = args.index("-o")
    out, options = args[i + 1], args[:i] + args[i + 2:]
    deps = made_from(dsc_compile)
    model = next((a for a in options if not a.startswith("-")), None)
    if deps is None or model is None or not os.path.isfile(model):
        return subprocess.run(plain).returncode
    h = hashlib.sha256()
    hash_files(h, deps)
    h.update(open(model, "rb").read())
    h.update("\0".join(a for a in options if a != model).encode())
    key = os.path.join(cache, h.hexdigest())
    os.makedirs(cache, exist_ok=True)
    with open(key + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(key + ".so"):
            proc = subprocess.run([dsc_compile] + options + ["-o", key + ".tmp.so"],
                                  stdout=subprocess.PIPE)
            if proc.returncode:
                sys.stdout.buffer.write(proc.stdout)
                return proc.returncode
            # What dsc-compile printed names the output it was given.
            with open(key + ".txt", "wb") as f:
                f.write(proc.stdout.replace((key + ".tmp.so").encode(), b"\0OUT\0"))
            os.replace(key + ".tmp.so", key + ".so")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    shutil.copyfile(key + ".so", out + ".tmp")
    os.replace(out + ".tmp", out)
    sys.stdout.buffer.write(open(key + ".txt", "rb").read().replace(b"\0OUT\0", out.encode()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
