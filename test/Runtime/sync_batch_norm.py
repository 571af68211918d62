#!/usr/bin/env python3
"""--sync-batch-norm: batch norms over the global batch of the data ranks.

A model with a batch norm in training mode after a trained projection
(x [B, 8] -> MatMul [8, 12] -> [B, 2, 2, 3] -> BatchNormalization over 2
channels, so over dimensions 0, 2 and 3 -> Relu -> [B, 12] -> MatMul
[12, 4] -> SoftmaxCrossEntropyLoss),
written here with onnx.helper, trains 10 SGD steps on the same samples:

- on one rank with batch 8 (the definition: the batch norm's statistics
  are the whole batch's);
- on 2 data-parallel ranks with batch 4 each and --sync-batch-norm: the
  statistics are summed over the ranks in the forward pass, and their
  gradients in the backward pass, so the run must follow one rank's: the
  loss and gradient norm within 1e-5 relative every step, the weights and
  the running statistics within 1e-6 (the sums are formed in another
  order);
- on 2 ranks without it (each rank's own 4 samples, as PyTorch's DDP with
  plain BatchNorm): the first loss already differs by more than 1e-3, which
  shows the comparison above can fail;
- with --unbiased-running-var on both (PyTorch's running variance), the
  same running variance within 1e-6: the Bessel factor of the global
  batch, not of a rank's part;
- on 2 ranks with --sync-batch-norm and --zero 3 (parameters split and
  gathered: the same arithmetic), within 1e-6 of the synced run; and with
  --grad-accum 2 (statistics per micro-batch of both ranks) and with
  --precision bf16: they train, to finite losses.

Also: --sync-batch-norm without --data-parallel, and on a model with no
batch norm, are errors naming the flag. Exits 77 (skipped) without mpirun.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ranks_harness  # noqa: E402
import tinygpt_harness  # noqa: E402
from ranks_harness import check, finish, mpirun, one_rank  # noqa: E402

STEPS = 10
LR = 0.1


def write_model(path, batch):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)

    def init(name, value):
        return numpy_helper.from_array(np.asarray(value, np.float32), name)

    inits = [
        init('w1', rng.normal(0, 0.5, (8, 12))),
        init('w2', rng.normal(0, 0.5, (12, 4))),
        init('bn.scale', rng.uniform(0.5, 1.5, 2)),
        init('bn.bias', rng.normal(0, 0.1, 2)),
        init('bn.running_mean', np.zeros(2)),
        init('bn.running_var', np.ones(2)),
        numpy_helper.from_array(np.array([batch, 2, 2, 3], np.int64), 'to4d'),
        numpy_helper.from_array(np.array([batch, 12], np.int64), 'to2d'),
    ]
    nodes = [
        helper.make_node('MatMul', ['x', 'w1'], ['h']),
        helper.make_node('Reshape', ['h', 'to4d'], ['h4']),
        helper.make_node('BatchNormalization',
                         ['h4', 'bn.scale', 'bn.bias', 'bn.running_mean',
                          'bn.running_var'],
                         ['n', 'bn.running_mean_out', 'bn.running_var_out'],
                         training_mode=1, momentum=0.9),
        helper.make_node('Relu', ['n'], ['r']),
        helper.make_node('Reshape', ['r', 'to2d'], ['r2']),
        helper.make_node('MatMul', ['r2', 'w2'], ['logits']),
        helper.make_node('SoftmaxCrossEntropyLoss', ['logits', 'labels'],
                         ['loss'], reduction='mean'),
    ]
    graph = helper.make_graph(
        nodes, 'bn', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [batch, 8]),
                      helper.make_tensor_value_info('labels', TensorProto.INT64, [batch])],
        [helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), path)


def main():
    args = tinygpt_harness.parse_args(__doc__)
    if shutil.which('mpirun') is None:
        print('mpirun not found (install openmpi-bin): skipped')
        return 77
    from safetensors.numpy import save_file
    with tempfile.TemporaryDirectory() as work:
        rng = np.random.default_rng(1)
        data = os.path.join(work, 'samples.safetensors')
        save_file({'x': rng.normal(0, 1, (64, 8)).astype(np.float32),
                   'labels': rng.integers(0, 4, 64).astype(np.int64)}, data)
        models = {}
        for batch in (8, 4, 2):
            models[batch] = os.path.join(work, f'bn{batch}.onnx')
            write_model(models[batch], batch)

        def compile(name, batch, *flags):
            path = os.path.join(work, name + '.tcx')
            r = subprocess.run([args.trainc, models[batch], '--train', '--optimizer', 'sgd',
                                '--lr', str(LR), '-o', path] + list(flags),
                               capture_output=True, text=True)
            return path if r.returncode == 0 else r.stderr

        one = compile('one', 8)
        synced = compile('synced', 4, '--mesh', 'data=2', '--data-parallel',
                         '--sync-batch-norm')
        local = compile('local', 4, '--mesh', 'data=2', '--data-parallel')
        for name, exe in (('one rank', one), ('synced', synced), ('local', local)):
            check(exe.endswith('.tcx'), f'{name} compiles ({exe.strip()[-300:]})')

        def run(launch, exe, name):
            """((loss, grad_norm) per step, final weights), or None."""
            out = os.path.join(work, name)
            os.makedirs(out)
            r = launch([args.trainc_run, exe, '--data', data, '--steps', str(STEPS),
                        '--eval-fraction', '0', '--deterministic-reductions',
                        '--no-progress', '--log-jsonl', os.path.join(out, 'log.jsonl'),
                        '--save-safetensors', os.path.join(out, 'weights.safetensors'),
                        '--output-dir', out])
            check(r.returncode == 0, f'{name} trains ({r.stderr.strip()[-500:]})')
            return ranks_harness.load_run(out) if r.returncode == 0 else None

        reference = run(one_rank, one, 'one')
        sync_run = run(lambda c: mpirun(2, c), synced, 'synced')
        local_run = run(lambda c: mpirun(2, c), local, 'local')
        if reference and sync_run:
            (ref_curve, ref_w), (cand_curve, cand_w) = reference, sync_run
            ref, cand = np.array(ref_curve), np.array(cand_curve)
            worst = float(np.max(np.abs(ref - cand) / np.abs(ref)))
            check(ref.shape == cand.shape == (STEPS, 2) and worst <= 1e-5,
                  f'2 synced ranks follow one rank\'s loss and grad_norm within 1e-5 '
                  f'(worst {worst:.2e})')
            check(sorted(ref_w) == sorted(cand_w) and
                  {'bn.running_mean', 'bn.running_var', 'w1'} <= set(ref_w),
                  f'the same tensors are saved, running statistics too ({sorted(ref_w)})')
            diffs = {k: float(np.max(np.abs(ref_w[k] - cand_w[k]))) for k in ref_w
                     if k in cand_w}
            bad = max(diffs, key=diffs.get)
            check(diffs[bad] <= 1e-6,
                  f'weights and running statistics within 1e-6 (worst {diffs[bad]:.2e} '
                  f'in {bad})')
            moved = float(np.max(np.abs(ref_w['bn.running_var'] - 1)))
            check(moved > 1e-3, f'the running variance moved ({moved:.2e})')
        # --unbiased-running-var (PyTorch's running variance): the Bessel
        # factor is the global batch's, 48 / 47, not a rank's 24 / 23.
        one_u = compile('one_unbiased', 8, '--unbiased-running-var')
        synced_u = compile('synced_unbiased', 4, '--mesh', 'data=2', '--data-parallel',
                           '--sync-batch-norm', '--unbiased-running-var')
        ref_u = run(one_rank, one_u, 'one_unbiased')
        got_u = run(lambda c: mpirun(2, c), synced_u, 'synced_unbiased')
        if ref_u and got_u and reference:
            worst = float(np.max(np.abs(ref_u[1]['bn.running_var'] -
                                        got_u[1]['bn.running_var'])))
            apart = float(np.max(np.abs(ref_u[1]['bn.running_var'] -
                                        reference[1]['bn.running_var'])))
            check(worst <= 1e-6 and apart > 1e-3,
                  f'--unbiased-running-var: 2 synced ranks\' running variance within '
                  f'1e-6 of one rank\'s ({worst:.2e}; {apart:.2e} from the population '
                  f'one)')

        # With ZeRO-3, gradient accumulation and bf16.
        zero3 = compile('zero3', 4, '--mesh', 'data=2', '--data-parallel',
                        '--sync-batch-norm', '--zero', '3')
        accum = compile('accum', 2, '--mesh', 'data=2', '--data-parallel',
                        '--sync-batch-norm', '--grad-accum', '2')
        bf16 = compile('bf16', 4, '--mesh', 'data=2', '--data-parallel',
                       '--sync-batch-norm', '--precision', 'bf16')
        for name, exe in (('zero 3', zero3), ('grad-accum 2', accum), ('bf16', bf16)):
            check(exe.endswith('.tcx'), f'{name} compiles ({exe.strip()[-300:]})')
            got = run(lambda c: mpirun(2, c), exe, name.replace(' ', '_'))
            if got:
                losses = [loss for loss, _ in got[0]]
                check(len(losses) == STEPS and all(np.isfinite(losses)),
                      f'{name}: {len(losses)} finite losses ({losses[0]:.4f} -> '
                      f'{losses[-1]:.4f})')
            if got and name == 'zero 3' and sync_run:
                worst = float(np.max(np.abs(np.array(got[0]) - np.array(sync_run[0])) /
                                     np.abs(np.array(sync_run[0]))))
                check(worst <= 1e-6, f'zero 3 follows the synced run within 1e-6 ({worst:.2e})')
        if reference and local_run:
            first = abs(local_run[0][0][0] - reference[0][0][0]) / abs(reference[0][0][0])
            check(first > 1e-3, f'without --sync-batch-norm the first loss differs '
                                f'({first:.2e} relative): the check above can fail')

        # Errors that name the flag.
        r = subprocess.run([args.trainc, models[4], '--train', '--sync-batch-norm',
                            '-o', os.path.join(work, 'x.tcx')], capture_output=True,
                           text=True)
        check(r.returncode != 0 and '--sync-batch-norm needs --data-parallel' in r.stderr,
              f'--sync-batch-norm without --data-parallel is an error ({r.stderr.strip()})')
        plain = os.path.join(args.data_dir, 'tied_erf', 'model_train_opset17.onnx')
        r = subprocess.run([args.trainc, plain, '--train', '--mesh', 'data=2',
                            '--data-parallel', '--sync-batch-norm', '-o',
                            os.path.join(work, 'y.tcx')], capture_output=True, text=True)
        check(r.returncode != 0 and 'no batch statistics to synchronize' in r.stderr,
              f'--sync-batch-norm on a model without batch norms is an error '
              f'({r.stderr.strip()[-200:]})')
    return finish('sync-batch-norm')


if __name__ == '__main__':
    sys.exit(main())
