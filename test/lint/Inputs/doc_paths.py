"""Fails when a document names a file of the repository that does not exist.

Docs cite code and tests by path (`test/e2e/train-zero.test`,
[running.md](running.md)); a file renamed or split leaves the citation
pointing nowhere. Checked in every Markdown file: relative links, and
backquoted paths that start with a top-level directory of the repository
(`lib/...`, `test/...`), resolved from the repository's root or from the
document's own directory. `*` and one `{a,b}` group are globs; a path
with a placeholder (`lib/Transforms/<Name>.cpp`) is not checked.

    doc_paths.py ROOT

Prints `PATH:LINE: ...` for every path that names nothing and exits 1, or
prints how many paths it checked and exits 0.
"""

import glob
import os
import re
import sys

from tracked_files import read_text, tracked_files

LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
QUOTED = re.compile(r"`([A-Za-z0-9_./*{},-]+)`")


def expand(path):
    """The paths a `{a,b}` group stands for."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [path[:m.start()] + alt + path[m.end():] for alt in m.group(1).split(",")]


def exists(root, doc_dir, path):
    for base in (root, os.path.join(root, doc_dir)):
        if all(glob.glob(os.path.join(base, p)) for p in expand(path)):
            return True
    return False


def main(argv):
    if len(argv) != 1:
        print("usage: doc_paths.py ROOT", file=sys.stderr)
        return 2
    root = argv[0]
    files = tracked_files(root)
    tops = {f.split("/", 1)[0] + "/" for f in files if "/" in f}
    checked = 0
    missing = 0
    for doc in (f for f in files if f.endswith(".md")):
        text = read_text(root, doc)
        if text is None:
            continue
        doc_dir = os.path.dirname(doc)
        for number, line in enumerate(text.splitlines(), 1):
            paths = [m.group(1) for m in LINK.finditer(line)
                     if "://" not in m.group(1) and not m.group(1).startswith("mailto:")]
            paths += [m.group(1) for m in QUOTED.finditer(line)
                      if m.group(1).startswith(tuple(tops))]
            for path in paths:
                checked += 1
                if not exists(root, doc_dir, path):
                    missing += 1
                    print(f"{doc}:{number}: '{path}' names no file of the repository")
    if missing:
        print(f"{missing} of {checked} paths name nothing")
        return 1
    print(f"{checked} paths checked, every one names a file of the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
