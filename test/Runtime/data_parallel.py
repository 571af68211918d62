#!/usr/bin/env python3
"""Data parallelism on MPI ranks against one rank with gradient accumulation.

tinygpt (tied_erf, opset 17) is compiled for N = 2 and 4 data-parallel ranks
(`--mesh data=N --data-parallel`, batch 2 per rank) and for one rank with
`--grad-accum N` (N micro-batches of 2: the same global batch of 2N windows,
micro-batch i being rank i's part). Both train 20 AdamW steps on the same
byte data from the same initial weights, launched by `mpirun --oversubscribe`.

- With --deterministic-reductions (sums in rank order), the loss, grad_norm
  curves and the final weights are bitwise equal to one rank's.
- With MPI's own reduction order, the curves agree within 1e-4 relative
  (ranks_harness.CURVE_RTOL says why) and the weights within 1e-4 (the
  orders differ in the last bits and 20 AdamW steps carry that forward),
  except the attention key biases, whose true gradient is exactly zero:
  AdamW turns the order-dependent rounding noise into steps of up to lr, so
  they are held to lr x steps (measured: 1.1e-3).
- With dropout 0.1 (a make_gpt.py GPT), rank r draws the masks of
  micro-batches r*K .. r*K+K-1 of one rank with --grad-accum N*K: 2 ranks
  equal --grad-accum 2 bit for bit, and 2 ranks with --grad-accum 2 follow
  --grad-accum 4 within the tolerances below (the averages are formed in
  another order).
- A fixed global batch given with --input is split across the ranks: one
  step's loss and gathered logits equal one rank's (bitwise, deterministic).

Faults that must end the job with a clear error, never a hang:
- rank 1 runs an executable compiled with another learning rate: the
  start-up hash exchange names rank 1;
- the data-parallel executable without mpirun, or on the wrong number of
  ranks, and a one-rank training step on two ranks;
- rank 1 stops (SIGSTOP) mid-training: rank 0's collective times out after
  --collective-timeout, naming the step, the instruction and rank 1;
- rank 1 is killed (SIGKILL) mid-training: the job ends (mpirun reports it);
- rank 1 gets SIGTERM: every rank stops after the same step, rank 0 saves
  that step's checkpoint, and two ranks resume from it.

Exits 77 (skipped) when mpirun is not installed, 1 on any failure.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import tinygpt_harness

import ranks_harness
from ranks_harness import (MPI_ENV, check, check_weights_close, finish, mpirun,
                           one_rank, write_byte_data)

STEPS = 20
LR = 3e-3


def curve(path):
    with open(path) as f:
        records = [json.loads(line) for line in f]
    # Runs of several ranks also log each step's communication and the
    # slowest rank's compute.
    for r in records:
        if 'slowest_rank' in r:
            assert r['comm_s'] >= 0 and r['slowest_compute_s'] >= r['median_compute_s'], r
            # Communication in flight: at least what was waited for (the
            # rest was hidden behind compute).
            assert r['comm_total_s'] >= r['comm_s'] * 0.99 - 1e-4, r
    return [(r['loss'], r['grad_norm']) for r in records], [
        'slowest_rank' in r for r in records]


def train(args, launch, exe, data, out, extra=()):
    """(curve(log), final weights) of a run, or None when it fails."""
    def load(out):
        from safetensors.numpy import load_file
        return curve(os.path.join(out, 'log.jsonl')), load_file(
            os.path.join(out, 'weights.safetensors'))
    return ranks_harness.train(args, launch, exe, data, out, STEPS, extra, load)[0]


def compare(name, reference, candidate, exact):
    if reference is None or candidate is None:
        check(False, f'{name}: both runs finish')
        return
    ((ref_curve, ref_ranked), ref_w), ((cand_curve, cand_ranked), cand_w) = \
        reference, candidate
    check(not any(ref_ranked) and all(cand_ranked),
          f'{name}: every step of the ranks logs comm_s and the slowest rank')
    if exact:
        check(ref_curve == cand_curve,
              f'{name}: loss and grad_norm curves bitwise equal over {STEPS} steps')
        same = sorted(ref_w) == sorted(cand_w) and all(
            np.array_equal(ref_w[k], cand_w[k]) for k in ref_w)
        check(same, f'{name}: final weights bitwise equal')
        return
    ref, cand = np.array(ref_curve), np.array(cand_curve)
    worst = float(np.max(np.abs(ref - cand) / np.abs(ref)))
    check(ref.shape == cand.shape and worst <= ranks_harness.CURVE_RTOL,
          f'{name}: curves within {ranks_harness.CURVE_RTOL:g} relative (worst {worst:.2e})')
    check_weights_close(name, ref_w, cand_w, LR, STEPS)


def main():
    args = tinygpt_harness.parse_args(__doc__)
    if shutil.which('mpirun') is None:
        print('mpirun not found (install openmpi-bin): skipped')
        return 77
    model = os.path.join(args.data_dir, 'tied_erf', 'model_train_opset17.onnx')
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, 'data.txt')
        write_byte_data(data)
        rng = np.random.default_rng(3)

        def compile(name, *flags):
            path = os.path.join(work, name + '.tcx')
            subprocess.run([args.trainc, model, '--train', '--lr', str(LR),
                            '-o', path] + list(flags), check=True)
            return path

        for n in (2, 4):
            dp = compile(f'dp{n}', '--mesh', f'data={n}', '--data-parallel')
            ga = compile(f'ga{n}', '--grad-accum', str(n))
            reference = train(args, one_rank, ga, data, os.path.join(work, f'ga{n}'))
            exact = train(args, lambda c: mpirun(n, c), dp, data,
                          os.path.join(work, f'dp{n}_exact'),
                          ['--deterministic-reductions'])
            compare(f'{n} ranks, deterministic', reference, exact, exact=True)
            loose = train(args, lambda c: mpirun(n, c), dp, data,
                          os.path.join(work, f'dp{n}_mpi'))
            compare(f'{n} ranks, MPI order', reference, loose, exact=False)

        # Dropout: rank r draws the masks of micro-batches r*K .. r*K+K-1 of
        # one rank with --grad-accum N*K, so the runs agree bit for bit.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        '..', '..', 'tools'))
        import make_gpt
        import onnx
        gpt = make_gpt.GptConfig(vocab=128, seq=32, batch=2, d_model=32, heads=2,
                                 layers=1, mlp_ratio=4, tied=True, seed=0, dropout=0.1)
        dropout_model = os.path.join(work, 'dropout.onnx')
        onnx.save(make_gpt.build_model(gpt), dropout_model)
        for n, k in ((2, 1), (2, 2)):
            def compile_dropout(name, *flags):
                path = os.path.join(work, name + '.tcx')
                subprocess.run([args.trainc, dropout_model, '--train', '--lr', str(LR),
                                '-o', path] + list(flags), check=True)
                return path
            one = compile_dropout(f'drop_ga{n * k}', '--grad-accum', str(n * k))
            ranks = compile_dropout(f'drop_dp{n}_ga{k}', '--grad-accum', str(k),
                                    '--mesh', f'data={n}', '--data-parallel')
            reference = train(args, one_rank, one, data, os.path.join(work, f'dga{n * k}'))
            got = train(args, lambda c: mpirun(n, c), ranks, data,
                        os.path.join(work, f'ddp{n}_{k}'), ['--deterministic-reductions'])
            # K = 1: the same sums in the same order. K = 2: each rank
            # averages its micro-batches first ((g0+g1)/2 + (g2+g3)/2) / 2
            # against (((g0+g1)+g2)+g3) / 4: equal up to rounding; masks
            # that differed would move the loss by far more than 1e-4.
            compare(f'dropout 0.1, {n} ranks x grad-accum {k} vs grad-accum {n * k}',
                    reference, got, exact=k == 1)

        # A fixed global batch from files: split on the way in, gathered on
        # the way out.
        dp2, ga2 = os.path.join(work, 'dp2.tcx'), os.path.join(work, 'ga2.tcx')
        tokens = rng.integers(0, 128, (4, 32)).astype(np.int64)
        np.save(os.path.join(work, 'tokens.npy'), tokens)
        np.save(os.path.join(work, 'targets.npy'), np.roll(tokens, -1, axis=1))
        inputs = ['--input', f'tokens={work}/tokens.npy',
                  '--input', f'targets={work}/targets.npy']
        outs = {}
        for tag, launch, exe in (('one', one_rank, ga2),
                                 ('two', lambda c: mpirun(2, c), dp2)):
            out = os.path.join(work, 'fixed_' + tag)
            r = launch([args.trainc_run, exe, '--output-dir', out,
                        '--deterministic-reductions'] + inputs)
            check(r.returncode == 0 and 'logits: f32 [4, 32, 128]' in r.stdout,
                  f'fixed batch on {tag} rank(s) runs and names the whole logits '
                  'it writes')
            if r.returncode == 0:
                outs[tag] = (np.load(os.path.join(out, 'loss.npy')),
                             np.load(os.path.join(out, 'logits.npy')))
        if len(outs) == 2:
            check(np.array_equal(outs['one'][0], outs['two'][0]),
                  'fixed batch: the loss of 2 ranks equals one rank\'s')
            check(outs['two'][1].shape == (4, 32, 128) and
                  np.array_equal(outs['one'][1], outs['two'][1]),
                  'fixed batch: logits gathered whole (4 x 32 x 128), equal')

        # --inspect shows the mesh and what is split.
        r = one_rank([args.trainc_run, dp2, '--inspect'])
        check('mesh: data=2, tensor=1 (2 ranks' in r.stdout and
              'tokens split [data, -]' in r.stdout and
              r.stdout.count('= all_reduce_start(') == 2 and
              r.stdout.count('= collective_done(') == 2,
              '--inspect shows the mesh, the split inputs and two all_reduces '
              '(the loss, one bucket of gradients), each started and done')

        # Faults.
        other = compile('dp2_other', '--mesh', 'data=2', '--data-parallel',
                        '--lr', '1e-3')
        run = [args.trainc_run, '--data', data, '--data-format', 'bytes',
               '--steps', '3', '--no-progress', '--output-dir',
               os.path.join(work, 'faults')]
        start = time.monotonic()
        r = subprocess.run(['mpirun', '--oversubscribe', '-np', '1'] + run + [dp2] +
                           [':', '-np', '1'] + run + [other],
                           capture_output=True, text=True, env=MPI_ENV, timeout=120)
        check(r.returncode != 0 and 'do not all run the same executable' in r.stderr
              and 'rank(s) 1' in r.stderr,
              f'another executable on rank 1 is named ({time.monotonic() - start:.1f} s): '
              + r.stderr.strip().splitlines()[0][:160] if r.stderr.strip() else 'no message')
        # Ranks that would each train on their own batches: named, with
        # what differs, before the first step.
        other_data = os.path.join(work, 'other.txt')
        with open(data, 'rb') as f, open(other_data, 'wb') as g:
            g.write(f.read()[::-1])  # the same tokens, in another order
        other_run = [other_data if a == data else a for a in run]
        for what, rank1, says in (
                ('--seed 1', run + [dp2, '--seed', '1'], 'rank 1 has seed 1, rank 0 0'),
                ('--eval-fraction 0.2', run + [dp2, '--eval-fraction', '0.2'],
                 'rank 1 holds out another part of the data'),
                ('other data of the same size', other_run + [dp2],
                 'rank 1 read other data')):
            r = subprocess.run(['mpirun', '--oversubscribe', '-np', '1'] + run + [dp2] +
                               [':', '-np', '1'] + rank1,
                               capture_output=True, text=True, env=MPI_ENV, timeout=120)
            check(r.returncode != 0 and says in r.stderr
                  and 'no single run draws' in r.stderr and 'step 1:' not in r.stdout,
                  f'rank 1 given {what} is named before a step: '
                  + (r.stderr.strip().replace('\n', ' | ')[:200] or 'no message'))
        r = one_rank(run + [dp2])
        check(r.returncode != 0 and 'mpirun' in r.stderr,
              'the 2-rank executable without mpirun says to use mpirun: '
              + r.stderr.strip()[:160])
        r = mpirun(4, run + [dp2], timeout=120)
        check(r.returncode != 0 and 'runs on 2 ranks' in r.stderr,
              'the 2-rank executable on 4 ranks is refused')
        r = mpirun(2, run + [ga2], timeout=120)
        check(r.returncode != 0 and 'training step for one rank' in r.stderr,
              'a one-rank training step on 2 ranks is refused')

        # SIGTERM to one rank (a preemption): the ranks agree to stop after
        # the same step, rank 0 saves it, and 2 ranks resume from it.
        ckpt = os.path.join(work, 'ckpt')
        term_run = [args.trainc_run, dp2, '--data', data, '--data-format', 'bytes',
                    '--steps', '100000', '--no-progress', '--log-every', '100000',
                    '--save-state', ckpt, '--output-dir', os.path.join(work, 'term')]
        script = ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then '
                  '(sleep 1.5; kill -TERM $$) & fi; exec "$@"')
        r = mpirun(2, ['sh', '-c', script, 'sh'] + term_run, timeout=120)
        steps = sorted(set(int(l.split('after step ')[1].split(';')[0])
                           for l in r.stderr.splitlines() if 'after step' in l))
        latest = open(os.path.join(ckpt, 'latest')).read().strip() \
            if os.path.exists(os.path.join(ckpt, 'latest')) else ''
        check(len(steps) == 1 and latest == f'step-{steps[0]:012d}',
              f'SIGTERM to rank 1: both ranks stop after step {steps}, rank 0 saved {latest}')
        r = mpirun(2, [args.trainc_run, dp2, '--data', data, '--data-format', 'bytes',
                       '--resume', ckpt, '--steps', '3', '--no-progress',
                       '--output-dir', os.path.join(work, 'resumed')], timeout=120)
        check(r.returncode == 0 and f'at step {steps[0] if steps else -1}' in r.stdout,
              '2 ranks resume from the checkpoint rank 0 wrote')
        fresh = [args.trainc_run, dp2, '--data', data, '--data-format', 'bytes',
                 '--steps', '3', '--no-progress',
                 '--output-dir', os.path.join(work, 'half_resumed')]
        r = subprocess.run(['mpirun', '--oversubscribe', '-np', '1'] + fresh +
                           ['--resume', ckpt, ':', '-np', '1'] + fresh,
                           capture_output=True, text=True, env=MPI_ENV, timeout=120)
        check(r.returncode != 0 and
              f'rank 1 has done 0 steps, rank 0 {steps[0] if steps else -1}' in r.stderr,
              'a resume on rank 0 alone is named: '
              + (r.stderr.strip().replace('\n', ' | ')[:160] or 'no message'))

        # A rank that stops, and one that dies, in the middle of training.
        long_run = [args.trainc_run, dp2, '--data', data, '--data-format', 'bytes',
                    '--steps', '100000', '--no-progress', '--collective-timeout', '4',
                    '--output-dir', os.path.join(work, 'faults')]
        # Rank 0 waits either in an instruction's all_reduce or in the
        # per-step comparison of the ranks; both name the step.
        ranks_harness.check_rank_faults('data 2', long_run)
    return finish('data-parallel')


if __name__ == '__main__':
    sys.exit(main())
