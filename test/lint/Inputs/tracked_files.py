"""The files of a source tree that the lint tests read.

In a git checkout (the tree's root is the work tree's top level): the tracked
files, so that build directories and scratch files are never read. Anywhere
else (an unpacked archive, a test's scratch tree): every file under the root
except hidden directories and build directories (`build*`).
"""

import os
import subprocess


def tracked_files(root):
    """Paths relative to `root`, sorted."""
    root = os.path.realpath(root)
    try:
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if os.path.realpath(top) == root:
            out = subprocess.run(["git", "-C", root, "ls-files", "-z"],
                                 capture_output=True, check=True).stdout
            return sorted(p for p in out.decode().split("\0")
                          if p and os.path.isfile(os.path.join(root, p)))
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and not d.startswith("build"))
        for name in filenames:
            found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(found)


def read_text(root, path):
    """The file's text, or None for a binary file."""
    with open(os.path.join(root, path), "rb") as f:
        data = f.read()
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")
