"""Fails when a file of the repository names a file outside it.

The team's design notes (DESIGN.md, STYLE.md, the MLIR 22 and DeepSpeed notes,
the GPU kernel notes) live beside the repository, not in it: a clone does not
have them, so a comment or doc that sends its reader there points nowhere.
State the fact in place, or point at a doc in docs/ (docs/architecture.md,
docs/development.md, ...).

    no_external_refs.py ROOT [--skip DIR]...

Prints `PATH:LINE: ...` for every reference and exits 1, or prints how many
files it read and exits 0. A name counts only while the repository has no
file of that name (a repository doc called STYLE.md may be cited).
"""

import argparse
import os
import re
import sys

from tracked_files import read_text, tracked_files

# Spelled in pieces so that this file does not name them itself.
NOTES = ["DESIGN" + ".md", "STYLE" + ".md", "mlir-22-" + "notes",
         "deepspeed-" + "semantics", "gpu-" + "kernels.md"]
# The notes' folder (`shared/`, `../shared/`) and the machine's /work/ tree.
OUTSIDE = [r"(?:\.\./)+" + "shared/", r"(?<![\w/.-])" + "shared/", "/work" + "/"]


def main(argv):
    p = argparse.ArgumentParser(prog="no_external_refs.py")
    p.add_argument("root")
    p.add_argument("--skip", action="append", default=[],
                   help="a directory (relative to ROOT) not to read")
    args = p.parse_args(argv)
    files = tracked_files(args.root)
    basenames = {os.path.basename(f) for f in files}
    names = [n for n in NOTES if n not in basenames]
    outside = [o for o in OUTSIDE
               if not (o.endswith("shared/") and any(f.startswith("shared/") for f in files))]
    pattern = re.compile("|".join([re.escape(n) for n in names] + outside))
    skip = tuple(d.rstrip("/") + "/" for d in args.skip)
    hits = 0
    read = 0
    for path in files:
        if path.startswith(skip):
            continue
        text = read_text(args.root, path)
        if text is None:
            continue
        read += 1
        for number, line in enumerate(text.splitlines(), 1):
            for m in pattern.finditer(line):
                hits += 1
                print(f"{path}:{number}: names '{m.group(0)}', which is outside "
                      "the repository: state the fact here or point at a doc in docs/")
    if hits:
        print(f"{hits} reference(s) outside the repository")
        return 1
    print(f"{read} files read, no reference outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
