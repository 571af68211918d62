#!/usr/bin/env python3
"""Exit 0 when every requirement in the given file is installed, else 1.

Lets tools/setup.sh skip pip (several seconds) when nothing is missing.
"""
import sys
from importlib import metadata

try:
    from packaging.requirements import Requirement
except ImportError:  # pip vendors packaging.
    from pip._vendor.packaging.requirements import Requirement


def main(path):
    missing = []
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            missing.append(f"{req} (not installed)")
            continue
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            missing.append(f"{req} (have {version})")
    for m in missing:
        print("missing:", m)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
