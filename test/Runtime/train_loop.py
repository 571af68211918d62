#!/usr/bin/env python3
"""The training loop over data files, against onnxruntime and itself.

tinygpt (tied_erf, opset 17) is compiled as an AdamW step and as a forward
executable, then trained by `trainc-run --data` on a trainc token file of
random ids. Checked:
- the batches: step k's training loss, computed by trainc on the batch its
  sampler drew with the weights after k-1 steps, equals onnxruntime's loss of
  the ONNX model trainc-run exported after k-1 steps (--export-onnx) on the
  batch this script draws with the documented sampler (TokenData.h); for
  k = 1 (the original model) and k = 4 (a model exported after 3 steps),
  within 1e-5 relative (f32 sums in another order);
- the held-out loss trainc reports equals onnxruntime's mean loss over the
  documented held-out windows with the exported weights (1e-5);
- the exported ONNX's initializers equal the safetensors export bit for bit;
- resuming from --save-state after 3 steps gives a 4th step bit-identical
  to an uninterrupted 4-step run, in loss and in every weight;
- the JSONL log: one record per step with every metric, data_position equal
  to the step, eval_loss on evaluation steps only;
- the same data as a headerless uint16 .bin and a uint32 token file gives
  the same losses; another seed gives other batches;
- SIGINT stops the run after the current step, still writes the weights and
  exits 130.
"""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(__file__))
import tinygpt_harness  # noqa: E402

M64 = (1 << 64) - 1
C1, C2, C3 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
BATCH, SEQ, VOCAB = 2, 32, 128
EVAL_FRACTION = 0.1


def mix(seed, p, b):
    z = (seed * C1 + p * C2 + b * C3 + C1) & M64
    z = ((z ^ (z >> 30)) * C2) & M64
    z = ((z ^ (z >> 27)) * C3) & M64
    return z ^ (z >> 31)


def train_batch(tokens, train_len, seed, p):
    starts = [(mix(seed, p, b) * (train_len - SEQ)) >> 64 for b in range(BATCH)]
    windows = np.stack([tokens[s:s + SEQ + 1] for s in starts]).astype(np.int64)
    return windows[:, :-1], windows[:, 1:]


def eval_batches(tokens, train_len, count):
    for k in range(count):
        starts = [train_len + (k * BATCH + b) * SEQ for b in range(BATCH)]
        w = np.stack([tokens[s:s + SEQ + 1] for s in starts]).astype(np.int64)
        yield w[:, :-1], w[:, 1:]


def ort_loss(model, x, y):
    session = ort.InferenceSession(model, providers=['CPUExecutionProvider'])
    names = [o.name for o in session.get_outputs()]
    return float(session.run(['loss'] if 'loss' in names else None,
                             {'tokens': x, 'targets': y})[0])


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f'{" ".join(cmd)} failed:\n{r.stdout}{r.stderr}')
    return r.stdout


def losses(stdout):
    return {int(s): float(v) for s, v in
            re.findall(r'^step (\d+): loss (\S+)', stdout, re.M)}


def close(what, got, want, bound=1e-5):
    err = abs(got - want) / abs(want)
    ok = err <= bound
    print(f'{"ok" if ok else "FAIL"}: {what}: trainc {got:.9g}, reference '
          f'{want:.9g} (rel {err:.1e}, bound {bound:.0e})')
    return ok


def main():
    args = tinygpt_harness.parse_args(__doc__)
    ok = True
    model = os.path.join(args.data_dir, 'tied_erf', 'model_train_opset17.onnx')
    with tempfile.TemporaryDirectory() as work:
        p = lambda name: os.path.join(work, name)  # noqa: E731
        run([args.trainc, model, '--train', '--optimizer', 'adamw', '--lr',
             '1e-3', '-o', p('step.tcx')])
        run([args.trainc, model, '-o', p('fwd.tcx')])
        rng = np.random.default_rng(7)
        tokens = rng.integers(0, VOCAB, size=6000).astype(np.uint16)
        with open(p('d.tok'), 'wb') as f:
            f.write(b'TRAINCTK' + struct.pack('<IIQ', 1, 2, tokens.size))
            f.write(tokens.tobytes())
        with open(p('d32.tok'), 'wb') as f:
            f.write(b'TRAINCTK' + struct.pack('<IIQ', 1, 4, tokens.size))
            f.write(tokens.astype('<u4').tobytes())
        tokens.astype('<u2').tofile(p('d.bin'))
        train_len = tokens.size - int(np.floor(tokens.size * EVAL_FRACTION))
        seed = 5
        common = [args.trainc_run, p('step.tcx'), '--seed', str(seed)]

        # Three steps with evaluation, exports and the run state.
        os.makedirs(p('state'))
        out3 = run(common + [
            '--data', p('d.tok'), '--steps', '3',
            '--eval-executable', p('fwd.tcx'), '--eval-every', '2',
            '--eval-batches', '4', '--log-jsonl', p('log.jsonl'),
            '--peak-flops', '1e11', '--save-state', p('state'),
            '--save-safetensors', p('w.safetensors'),
            '--export-onnx', p('trained.onnx')])
        l3 = losses(out3)
        x, y = train_batch(tokens, train_len, seed, 0)
        ok &= close('step 1 loss vs onnxruntime on batch 0', l3[1],
                    ort_loss(model, x, y))
        evals = [float(v) for v in re.findall(r'eval_loss (\S+)', out3)]
        ref = np.mean([ort_loss(p('trained.onnx'), ex, ey)
                       for ex, ey in eval_batches(tokens, train_len, 4)])
        ok &= close('held-out loss after 3 steps vs onnxruntime on the '
                    'exported model', evals[-1], ref)

        trained = onnx.load(p('trained.onnx'))
        onnx.checker.check_model(trained)
        inits = {t.name: onnx.numpy_helper.to_array(t)
                 for t in trained.graph.initializer}
        safet = load_file(p('w.safetensors'))
        same = all(np.array_equal(inits[n], v) for n, v in safet.items())
        print(f'{"ok" if same else "FAIL"}: the exported ONNX holds the '
              f'{len(safet)} safetensors weights bit for bit')
        ok &= same

        # The 4th step: resumed, and uninterrupted.
        out_r = run(common + ['--data', p('d.tok'), '--steps', '1',
                              '--resume', p('state'),
                              '--save-safetensors', p('r.safetensors')])
        out4 = run(common + ['--data', p('d.tok'), '--steps', '4',
                             '--save-safetensors', p('w4.safetensors')])
        l_r, l4 = losses(out_r), losses(out4)
        x, y = train_batch(tokens, train_len, seed, 3)
        ok &= close('step 4 loss vs onnxruntime on batch 3 with the weights '
                    'exported after step 3', l4[4],
                    ort_loss(p('trained.onnx'), x, y))
        w_r, w4 = load_file(p('r.safetensors')), load_file(p('w4.safetensors'))
        same = l_r.get(4) == l4[4] and all(
            np.array_equal(w_r[n], w4[n]) for n in w4)
        print(f'{"ok" if same else "FAIL"}: resumed step 4 (loss '
              f'{l_r.get(4)}) is bit-identical to the uninterrupted run')
        ok &= same

        records = [json.loads(line) for line in open(p('log.jsonl'))]
        keys = {'step', 'loss', 'grad_norm', 'lr', 'step_time_s',
                'tokens_per_s', 'flops_per_s', 'mfu', 'planned_bytes',
                'measured_bytes', 'peak_rss_bytes', 'data_position'}
        good = ([r['step'] for r in records] == [1, 2, 3] and
                all(keys <= r.keys() and r['data_position'] == r['step'] and
                    r['mfu'] > 0 and r['planned_bytes'] > 0 and
                    r['measured_bytes'] == r['planned_bytes']
                    for r in records) and
                ['eval_loss' in r for r in records] == [False, True, True] and
                [np.float32(r['loss']) for r in records] ==
                [np.float32(l3[k]) for k in (1, 2, 3)])
        print(f'{"ok" if good else "FAIL"}: JSONL log {records[0]}')
        ok &= good

        # Other encodings of the same ids; another seed.
        same = True
        for extra in (['--data', p('d.bin'), '--token-dtype', 'uint16'],
                      ['--data', p('d32.tok')]):
            same &= losses(run(common + extra + ['--steps', '3'])) == l3
        print(f'{"ok" if same else "FAIL"}: uint16 .bin and uint32 token '
              'file give the same losses')
        ok &= same
        # Ctrl-C: stops after the current step, still writes the weights,
        # exits 130.
        proc = subprocess.Popen(
            common + ['--data', p('d.tok'), '--steps', '1000000',
                      '--save-safetensors', p('int.safetensors')],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = ''
        for first in proc.stdout:  # until the loop has started
            if first.startswith('step '):
                break
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=120)
        stopped = losses(first + rest)
        good = (proc.returncode == 130 and 'interrupted after step' in err and
                0 < len(stopped) < 1000000 and
                len(load_file(p('int.safetensors'))) == len(safet))
        print(f'{"ok" if good else "FAIL"}: SIGINT after {len(stopped)} '
              f'step(s): exit {proc.returncode}, weights written')
        ok &= good

        other = losses(run([args.trainc_run, p('step.tcx'), '--seed', '6',
                            '--data', p('d.tok'), '--steps', '1']))
        differs = other[1] != l3[1]
        print(f'{"ok" if differs else "FAIL"}: seed 6 draws another batch')
        ok &= differs
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
