#!/usr/bin/env python3
"""Exit 0 when every requirement in the given file is installed, else 1.

    check_requirements.py REQUIREMENTS [--require-venv]

Lets tools/setup.sh skip pip (several seconds) when nothing is missing. With
--require-venv (the test suite's first check) it also fails unless this
interpreter is a virtual environment, so tests never pass only because a
package happens to be installed system-wide.
"""
import sys
from importlib import metadata

try:
    from packaging.requirements import Requirement
except ImportError:  # pip vendors packaging.
    from pip._vendor.packaging.requirements import Requirement


def main(path, require_venv=False):
    missing = []
    if require_venv and sys.prefix == sys.base_prefix:
        print(f"{sys.executable} is not a virtual environment; run "
              "tools/setup.sh, which makes BUILD_DIR/venv and configures "
              "the build with it")
        return 1
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
    args = sys.argv[1:]
    if len(args) not in (1, 2) or (len(args) == 2 and args[1] != "--require-venv"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(args[0], require_venv=len(args) == 2))
