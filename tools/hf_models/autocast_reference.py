#!/usr/bin/env python3
"""PyTorch CPU autocast references for trainc's mixed precision.

    /path/to/oracle-venv/bin/python tools/hf_models/autocast_reference.py test/Models/hf

For each model of the suite (models.py), on the batch export.py committed
(<model>/<input>.npy) and from the same initial weights, runs one forward
and backward pass under `torch.autocast('cpu', dtype)` for bf16 and fp16
(fp16 with the loss multiplied by 2^16 and the gradients divided by it, as
GradScaler's first step does; trainc's fp16 step does the same), with the
float32 master parameters autocast keeps, and writes
<model>/autocast.npz: loss_<bf16|fp16> and grad_<bf16|fp16>/<param>. The
float64 references in reference.npz are the exact values both are
compared against (test/Models/hf_precision.py).

Needs torch and transformers (tools/hf_models/requirements.txt); CI never
runs it, it compares against the committed files.
"""
import argparse
import json
import os
import sys
import warnings

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

LOSS_SCALE = 65536.0


def autocast_gradients(case, batch, dtype):
    torch.manual_seed(0)
    wrapper = models.LossOf(case.build().float(), case.inputs)
    wrapper.train()
    args = tuple(batch[k] for k in case.inputs)
    with torch.autocast('cpu', dtype=dtype):
        loss = wrapper(*args)
    scale = LOSS_SCALE if dtype == torch.float16 else 1.0
    (loss.float() * scale).backward()
    grads = {}
    for name, p in wrapper.named_parameters():
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        grads[name] = (g.double() / scale).float().numpy()
    return float(loss), grads


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out', help='the export directory (test/Models/hf)')
    parser.add_argument('--models', nargs='*', help='only these models')
    args = parser.parse_args()
    warnings.filterwarnings('ignore')
    transformers.logging.set_verbosity_error()
    summary = json.load(open(os.path.join(args.out, 'summary.json')))
    for case in models.CASES:
        if args.models and case.name not in args.models:
            continue
        d = os.path.join(args.out, case.name)
        batch = {k: torch.from_numpy(np.load(os.path.join(d, f'{k}.npy'))) for k in case.inputs}
        ref = {}
        for dtype, tag in ((torch.bfloat16, 'bf16'), (torch.float16, 'fp16')):
            loss, grads = autocast_gradients(case, batch, dtype)
            ref[f'loss_{tag}'] = np.array(loss)
            for name, g in grads.items():
                ref[f'grad_{tag}/{name}'] = g
        np.savez_compressed(os.path.join(d, 'autocast.npz'), **ref)
        print(f"{case.name}: bf16 loss {float(ref['loss_bf16']):.6f}, fp16 loss "
              f"{float(ref['loss_fp16']):.6f} (f32 {summary['models'][case.name]['loss_f32']:.6f})")
    summary['autocast_torch'] = torch.__version__
    with open(os.path.join(args.out, 'summary.json'), 'w') as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write('\n')


if __name__ == '__main__':
    main()
