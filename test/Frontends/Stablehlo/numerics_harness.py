"""Helpers shared by the StableHLO numerics tests (chlo_numerics,
libm_compositions): run trainc and trainc-run, and write parameters as
safetensors for `trainc --params`."""
import json
import struct
import subprocess
import sys

import numpy as np


def run(cmd):
    """Runs `cmd`; exits the test with its stderr if it fails."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r


def write_safetensors(path, tensors):
    """A safetensors file of the float32/float64 arrays `tensors` (name ->
    array), little-endian, in order."""
    header, raw = {}, b''
    for name, a in tensors.items():
        b = a.astype(a.dtype.newbyteorder('<')).tobytes()
        header[name] = {'dtype': {np.dtype(np.float32): 'F32', np.dtype(np.float64): 'F64'}[a.dtype],
                        'shape': list(a.shape), 'data_offsets': [len(raw), len(raw) + len(b)]}
        raw += b
    h = json.dumps(header).encode()
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + raw)
