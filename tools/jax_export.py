#!/usr/bin/env python3
"""Export a JAX loss function as StableHLO text and safetensors for trainc.

The command line of trainc.jax_export (frontends/python/trainc/jax_export.py,
where the documentation is: `tools/jax_export.py --help`), runnable from a
checkout without installing the package; `import jax_export` from tools/
gives the same functions (export, load_params, ...).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, 'frontends', 'python'))

from trainc.jax_export import *  # noqa: E402,F401,F403
from trainc.jax_export import (ExportError, Exported, export,  # noqa: E402,F401
                               load_params, main, params_from_dict)

if __name__ == '__main__':
    sys.exit(main())
