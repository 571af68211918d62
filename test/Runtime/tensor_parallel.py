#!/usr/bin/env python3
"""Tensor parallelism on MPI ranks against one rank.

tinygpt (tied_erf, opset 17: 4 heads, 256 MLP features, batch 2) is compiled
with `--mesh tensor=T --tensor-parallel` (attention split by heads, the MLP
by features, Megatron-style) and trained 20 AdamW steps (lr 1e-3, see LR)
on byte data from the same initial weights as one rank, launched by
`mpirun --oversubscribe`:

- T = 2 and T = 4 follow one rank's loss and grad_norm curves within 1e-4
  relative (ranks_harness.CURVE_RTOL), and the final weights agree within 1e-4 (the attention key
  biases within lr x steps; see ranks_harness.check_weights_close): the
  split contractions are summed in another order, so bitwise equality is
  not expected.
- data x tensor = 2 x 2 (`--data-parallel`; the two ranks of a tensor group
  read the same batch) follows one rank with `--grad-accum 2` the same way,
  and so does 2 x 2 with ZeRO-3 over the data axis.
- Every rank's measured arena peak equals its planned peak, and the
  planned activations of one rank of T = 2 are below one rank's.
- The weights of the split projections (all but the fused QKV, the
  embeddings and the norms) are kept as parts, with their gradients and
  AdamW state: --print-memory-plan's parameter, gradient and state bytes
  per rank equal (P - Pt + Pt/T) x (4, 4, 8), Pt being the elements of
  the split parameters.
- --inspect shows the tensor axis and the collectives over it.
- With --recompute full, --grad-accum 2 and --clip-grad-norm 0.5, 2
  ranks follow one rank with the same flags as above over 10 steps.
- With --precision bf16, the row-parallel partial sums are summed in f32
  (MPI sums no bf16), and 2 ranks follow one bf16 rank's loss within
  1e-3 over 10 steps (a bf16 rounding is within 2^-9 relative).
- A 2 x 2 checkpoint resumes on one rank with --grad-accum 2, and a
  tensor 2 checkpoint (split weights saved as parts along dimensions 0
  and 1, per the manifest) on tensor 4; both end within the tolerances
  above of 20 uninterrupted steps.
- Models nobody here wrote: the Hugging Face GPT-2 (fused QKV in a Conv1D)
  and Llama (SwiGLU MLP, RMSNorm) of test/Models/hf, both exporters, on
  2 tensor-parallel ranks (`--optimizer none`): the loss and every
  gradient within 1e-4 of PyTorch's float64 ones (the criterion of
  test/Models/hf_models.py), with Megatron's 4 all-reduces per block
  (2 forward, 2 backward) for the TorchScript exports.
- The same two and T5 with dropout 0.1 in training mode
  (test/Models/hf_dropout, tools/hf_models/export_dropout.py; Llama with 4
  query heads on 2 key/value heads), both exporters: the attention with
  dropout splits by heads like the rest (`head_blocks = 2` on every
  graph.attention and graph.attention_grad), T5's dropout between each
  MLP's activation and down projection splits with the features, and the
  dropout in its relative biases' gradient with the heads (graph.dropout's
  `blocks = 2`), and 2 ranks follow one rank's loss and grad_norm
  curves over 20 AdamW steps within CURVE_RTOL (measured: 1.7e-7), so
  each rank draws its part of one device's masks (ranks numbering their
  heads from 0 draw others: 1e-3 to 5e-3 from step 1; T5's dropouts
  numbered as whole tensors 5.6e-2, measured). data x tensor 2 x 2
  (data_seed_stride beside the blocks; GPT-2 and T5) follows one rank with
  --grad-accum 2 the same way.

Faults on the tensor axis end the job with a clear error, never a hang: a
rank stopped (SIGSTOP) mid-training is named by the other's collective
timeout, and a rank killed (SIGKILL) ends the job.

Exits 77 (skipped) when mpirun is not installed, 1 on any failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import tinygpt_harness

HF_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'Models')
sys.path.insert(0, HF_DIR)
import hf_models  # noqa: E402

import ranks_harness
from ranks_harness import (check, compare_loose, finish, mpirun, one_rank,
                           train)

STEPS = 20
# Not the 3e-3 of the data-parallel tests: at 3e-3 step 13 of this data
# spikes (grad_norm 199, in every run), and the spike turns the 1e-7
# differences of another summation order into 1e-4 within 7 steps
# (measured with tensor=2). At 1e-3 no step spikes, and tensor=4 follows
# one rank within 2e-7 over 20 steps.
LR = 1e-3


def launcher(n):
    return lambda command: mpirun(n, command)


def peaks(output):
    """(planned, measured) arena peaks of every rank that reported one."""
    return [(int(p), int(m)) for p, m in
            re.findall(r'memory peak planned (\d+), measured (\d+)', output)]


def main():
    args = tinygpt_harness.parse_args(__doc__)
    if shutil.which('mpirun') is None:
        print('mpirun not found (install openmpi-bin): skipped')
        return 77
    with tempfile.TemporaryDirectory() as work:
        compile, data = ranks_harness.tinygpt_workspace(args, work, LR)

        def activations(report):
            m = re.search(r'^  activations +(\d+) bytes', report, re.M)
            return int(m.group(1)) if m else None

        one, one_report = compile('one')
        ga2, _ = compile('ga2', '--grad-accum', '2')
        ref = train(args, one_rank, one, data, os.path.join(work, 'one'), STEPS)[0]
        ref_ga2 = train(args, one_rank, ga2, data, os.path.join(work, 'ga2'), STEPS)[0]

        runs = [('tensor 2', 2, ref, ['--mesh', 'tensor=2', '--tensor-parallel']),
                ('tensor 4', 4, ref, ['--mesh', 'tensor=4', '--tensor-parallel']),
                ('data 2 x tensor 2', 4, ref_ga2,
                 ['--mesh', 'data=2,tensor=2', '--tensor-parallel', '--data-parallel']),
                ('data 2 x tensor 2, ZeRO-3', 4, ref_ga2,
                 ['--mesh', 'data=2,tensor=2', '--tensor-parallel', '--data-parallel',
                  '--zero', '3'])]
        for i, (name, ranks, reference, flags) in enumerate(runs):
            exe, report = compile(f'run{i}', *flags)
            got, result = train(args, launcher(ranks), exe, data,
                                os.path.join(work, f'run{i}'), STEPS)
            compare_loose(name, reference, got, LR, STEPS)
            if got is None:
                continue
            found = peaks(result.stdout + result.stderr)
            check(found and all(p == m for p, m in found),
                  f'{name}: measured arena peak equals the planned peak {found[:1]}')
            if name in ('tensor 2', 'tensor 4', 'data 2 x tensor 2'):
                # Megatron's split weights: parameters, gradients and AdamW
                # state of the split projections are parts.
                m = re.search(r'Pt = (\d+) of them split over T = (\d+)', report)
                shares = re.findall(r'^  (parameters|gradients|optimizer state) +(\d+) '
                                    r'bytes  \(P-Pt\+Pt/T\) x \d+ = +(\d+)', report, re.M)
                check(m is not None and int(m.group(1)) > 0 and len(shares) == 3 and
                      all(planned == formula for _, planned, formula in shares),
                      f'{name}: planned training state equals (P - Pt + Pt/T) x (4, 4, 8) '
                      f'with Pt = {m.group(1) if m else None} split parameters: {shares}')
            if name == 'data 2 x tensor 2, ZeRO-3':
                # --check-writes while collectives are in flight: waiting
                # for one (collective_done) lets MPI advance the others,
                # into their own pending buffers, which is not a stray
                # write of the waiting instruction.
                checked, result = train(args, launcher(ranks), exe, data,
                                        os.path.join(work, f'run{i}_checked'), 2,
                                        ['--check-writes'])
                check(checked is not None and checked[0][:1] == got[0][:1],
                      f'{name}: --check-writes finds no stray write in 2 steps, '
                      f'the first loss unchanged ({result.stderr.strip()[-300:]})')
            if name == 'tensor 2':
                check(activations(report) < activations(one_report),
                      f'{name}: planned activations per rank below one rank\'s '
                      f'({activations(report)} < {activations(one_report)} bytes)')
                r = one_rank([args.trainc_run, exe, '--inspect'])
                check('mesh: data=1, tensor=2' in r.stdout
                      and 'all_reduce_start' in r.stdout and 'shard_slice' in r.stdout,
                      f'{name}: --inspect shows the tensor axis and its collectives')

        # Held-out evaluation with split parameters: the forward executable
        # (whole parameters, one rank's program) gets each split one
        # gathered; tensor 2 evaluates as one rank does, and ZeRO-3 on a 2 x
        # 2 mesh runs it too.
        fwd = os.path.join(work, 'fwd.tcx')
        subprocess.run([args.trainc, os.path.join(args.data_dir, 'tied_erf',
                                                  'model_train_opset17.onnx'),
                        '-o', fwd], check=True)
        evaluate = ['--eval-executable', fwd, '--eval-every', '4']

        def held_out(result):
            m = re.search(r'held-out loss ([0-9.]+)', result.stdout)
            return float(m.group(1)) if m else None
        _, one_eval = train(args, one_rank, one, data, os.path.join(work, 'eval_one'),
                            4, evaluate)
        for name, ranks, flags in (
                ('tensor 2', 2, ['--mesh', 'tensor=2', '--tensor-parallel']),
                ('data 2 x tensor 2, ZeRO-3', 4,
                 ['--mesh', 'data=2,tensor=2', '--tensor-parallel', '--data-parallel',
                  '--zero', '3'])):
            exe, _ = compile('eval_' + str(ranks), *flags)
            run, result = train(args, launcher(ranks), exe, data,
                                os.path.join(work, f'eval_{ranks}'), 4, evaluate)
            got, want = held_out(result), held_out(one_eval)
            close = (got is not None and want is not None and
                     (ranks == 4 or abs(got - want) <= 1e-4 * want))
            check(run is not None and close,
                  f'{name}: held-out loss {got} with the whole parameters gathered '
                  f'(one rank: {want})')

        # Split weights in checkpoints: tensor 2 saves parts (a row-parallel
        # weight along dimension 1), tensor 4 resumes from them.
        tp2_exe, _ = compile('ck_tp2', '--mesh', 'tensor=2', '--tensor-parallel')
        tp4_exe, _ = compile('ck_tp4', '--mesh', 'tensor=4', '--tensor-parallel')
        tp_state = os.path.join(work, 'tp_state')
        first_tp, _ = train(args, launcher(2), tp2_exe, data, os.path.join(work, 'tp_first'),
                            10, ['--save-state', tp_state, '--save-every', '5'])
        manifest = os.path.join(tp_state, 'step-000000000010', 'manifest.json')
        split = [t for t in json.load(open(manifest))['tensors']
                 if t['sharding'] != 'replicated'] if os.path.exists(manifest) else []
        check(first_tp is not None and
              {'axis': 'tensor', 'dim': 1, 'parts': 2} in [t['sharding'] for t in split] and
              {'axis': 'tensor', 'dim': 0, 'parts': 2} in [t['sharding'] for t in split],
              f'tensor 2 checkpoint: {len(split)} tensors saved as parts along '
              f'dimensions 0 and 1')
        then_tp4, result = train(args, launcher(4), tp4_exe, data,
                                 os.path.join(work, 'tp_then4'), STEPS - 10,
                                 ['--resume', tp_state])
        check(then_tp4 is not None and 'at step 10' in result.stdout,
              'tensor 2 checkpoint resumes at step 10 on tensor 4')
        if then_tp4 is not None and first_tp is not None:
            then_tp4 = (first_tp[0] + then_tp4[0], then_tp4[1])
        compare_loose('tensor 2 -> tensor 4 checkpoint', ref, then_tp4, LR, STEPS)

        # With the other phases: recompute, micro-batches, clipping (the
        # norm sums the split parameters' squares over the tensor axis).
        for tag, flags in (('--recompute full', ['--recompute', 'full']),
                           ('--grad-accum 2', ['--grad-accum', '2']),
                           ('--clip-grad-norm 0.5', ['--clip-grad-norm', '0.5'])):
            one_exe = ga2 if tag == '--grad-accum 2' else compile('ref_' + flags[0][2:],
                                                                   *flags)[0]
            exe, _ = compile('tp_' + flags[0][2:], *flags, '--mesh', 'tensor=2',
                             '--tensor-parallel')
            ref_run = train(args, one_rank, one_exe, data,
                            os.path.join(work, 'ref_' + flags[0][2:]), 10)[0]
            got_run = train(args, launcher(2), exe, data,
                            os.path.join(work, 'tp_' + flags[0][2:]), 10)[0]
            compare_loose(f'tensor 2 with {tag}', ref_run, got_run, LR, 10)

        # Mixed precision: 16-bit partial sums are summed in f32.
        b1, _ = compile('bf16_one', '--precision', 'bf16')
        b2, _ = compile('bf16_tp2', '--precision', 'bf16', '--mesh', 'tensor=2',
                        '--tensor-parallel')
        ref_b = train(args, one_rank, b1, data, os.path.join(work, 'bf16_one'), 10)[0]
        got_b = train(args, launcher(2), b2, data, os.path.join(work, 'bf16_tp2'), 10)[0]
        if ref_b is None or got_b is None:
            check(False, 'bf16, tensor 2: both runs finish')
        else:
            worst = max(abs(a - b) / a for (a, _), (b, _) in zip(ref_b[0], got_b[0]))
            # A bf16 rounding is within 2^-9 = 2.0e-3 relative; where the
            # split sums round otherwise, the loss (a mean) moves far less
            # (measured 9.9e-5 over 10 steps).
            check(len(ref_b[0]) == len(got_b[0]) == 10 and worst <= 1e-3,
                  f'bf16, tensor 2: loss curve within 1e-3 of one bf16 rank '
                  f'(worst {worst:.1e})')

        # Checkpoint of 2 x 2, resumed on one rank with --grad-accum 2.
        exe, _ = compile('ck', '--mesh', 'data=2,tensor=2', '--tensor-parallel',
                         '--data-parallel')
        state = os.path.join(work, 'state')
        first, _ = train(args, launcher(4), exe, data, os.path.join(work, 'ck_first'), 10,
                         ['--save-state', state, '--save-every', '5'])
        check(first is not None and os.path.exists(os.path.join(state, 'latest')),
              '2 x 2: checkpoint saved')
        resumed, result = train(args, one_rank, ga2, data, os.path.join(work, 'ck_resumed'),
                                STEPS - 10, ['--resume', state])
        check(resumed is not None and 'at step 10' in result.stdout,
              '2 x 2 checkpoint resumes at step 10 on one rank')
        if resumed is not None and first is not None:
            # The resumed run logs steps 11..20; join it to the first ten.
            resumed = (first[0] + resumed[0], resumed[1])
        compare_loose('2 x 2 checkpoint resumed on one rank', ref_ga2, resumed, LR, STEPS)
        # A rank of a tensor group that stops, and one that dies, in the
        # middle of training: the job ends with the error, never a hang.
        tp2, _ = compile('tp2_faults', '--mesh', 'tensor=2', '--tensor-parallel')
        long_run = [args.trainc_run, tp2, '--data', data, '--data-format', 'bytes',
                    '--steps', '100000', '--no-progress', '--collective-timeout', '4',
                    '--output-dir', os.path.join(work, 'faults')]
        ranks_harness.check_rank_faults('tensor 2', long_run)

        check_hugging_face(args, work)
        check_dropout(args, work)
    return finish('tensor-parallel')


def check_hugging_face(args, work):
    hf = os.path.join(HF_DIR, 'hf')
    summary = json.load(open(os.path.join(hf, 'summary.json')))
    for name in ('gpt2', 'llama'):
        info, model_dir = summary['models'][name], os.path.join(hf, name)
        ref = np.load(os.path.join(model_dir, 'reference.npz'))
        inputs = []
        for i in info['inputs']:
            inputs += ['--input', f'{i}={os.path.join(model_dir, i + ".npy")}']
        for exporter in ('ts17', 'dynamo'):
            tag = f'{name}/{exporter}, tensor 2'
            onnx_path = os.path.join(model_dir, f'{exporter}.onnx')
            exe = os.path.join(work, f'{name}_{exporter}_tp.tcx')
            flags = ['--train', '--optimizer', 'none', '--mesh', 'tensor=2',
                     '--tensor-parallel']
            r = subprocess.run([args.trainc, onnx_path, *flags, '-o', exe],
                               capture_output=True, text=True)
            ir = subprocess.run([args.trainc, onnx_path, *flags, '--compile-to=partition'],
                                capture_output=True, text=True).stdout
            if r.returncode != 0:
                check(False, f'{tag}: compiles: {r.stderr.strip()[-300:]}')
                continue
            if exporter == 'ts17':
                blocks = ir.count('graph.attention ')
                reduces = ir.count('graph.all_reduce ')
                check(blocks > 0 and reduces == 4 * blocks,
                      f'{tag}: {reduces} all-reduces for {blocks} blocks (Megatron: 4 each)')
            out = os.path.join(work, f'{name}_{exporter}_tp')
            r = mpirun(2, [args.trainc_run, exe, *inputs, '--output-dir', out])
            if r.returncode != 0:
                check(False, f'{tag}: runs: {r.stderr.strip()[-300:]}')
                continue
            problems = []
            loss = abs(float(np.load(os.path.join(out, 'loss.npy'))) -
                       float(ref['loss_f64'])) / abs(float(ref['loss_f64']))
            worst, worst_name, _ = hf_models.gradient_errors(ref, info, out, problems)
            check(not problems and loss <= hf_models.GRAD_RTOL
                  and worst <= hf_models.GRAD_RTOL,
                  f'{tag}: loss ({loss:.1e}) and gradients (worst {worst:.1e}, '
                  f'{worst_name}) within {hf_models.GRAD_RTOL} of PyTorch float64'
                  + (f': {problems}' if problems else ''))


def check_dropout(args, work):
    hf = os.path.join(HF_DIR, 'hf_dropout')
    steps = 20
    names = ('input_ids', 'attention_mask', 'labels')
    tensor2 = ['--mesh', 'tensor=2', '--tensor-parallel']

    def run(tag, onnx_path, flags, inputs, ranks, attentions=0, split_dropouts=0):
        """The (loss, grad_norm) curve of `steps` AdamW steps, or None."""
        base = os.path.join(work, re.sub(r'\W+', '_', tag))
        r = subprocess.run([args.trainc, onnx_path, '--train', *flags, '-o', base + '.tcx'],
                           capture_output=True, text=True)
        if r.returncode != 0:
            check(False, f'{tag}: compiles: {r.stderr.strip()[-300:]}')
            return None
        if ranks > 1:
            ir = subprocess.run([args.trainc, onnx_path, '--train', *flags,
                                 '--compile-to=partition'], capture_output=True, text=True).stdout
            ops = re.findall(r'graph\.attention(?:_grad)? .*', ir)
            split = [op for op in ops if 'dropout =' in op and 'head_blocks = 2' in op]
            check(len(ops) == attentions and len(split) == len(ops),
                  f'{tag}: {len(split)} of {len(ops)} attention ops (forward and '
                  f'gradient; expected {attentions}) split by heads with dropout')
            dropouts = [op for op in re.findall(r'graph\.dropout .*', ir) if 'blocks = 2' in op]
            check(len(dropouts) == split_dropouts,
                  f'{tag}: {len(dropouts)} graph.dropout ops split (expected {split_dropouts})')
        command = [args.trainc_run, base + '.tcx', *inputs, '--steps', str(steps),
                   '--no-progress', '--log-jsonl', base + '.jsonl', '--output-dir', base]
        r = one_rank(command) if ranks == 1 else mpirun(ranks, command)
        if r.returncode != 0:
            check(False, f'{tag}: runs on {ranks} rank(s): {r.stderr.strip()[-300:]}')
            return None
        with open(base + '.jsonl') as f:
            return np.array([(rec['loss'], rec['grad_norm']) for rec in map(json.loads, f)])

    def compare(tag, reference, candidate):
        if reference is None or candidate is None:
            return
        worst = (float(np.max(np.abs(reference - candidate) / np.abs(reference)))
                 if reference.shape == candidate.shape == (steps, 2) else float('inf'))
        check(worst <= ranks_harness.CURVE_RTOL,
              f'{tag}: loss and grad_norm within {ranks_harness.CURVE_RTOL:g} of one rank '
              f'over {steps} steps (worst {worst:.2e})')

    # Attention ops (2 blocks, or T5's 2 + 2 self- and 2 cross-attentions,
    # each with its gradient) and split graph.dropout ops: T5's 4 MLPs
    # drop out their hidden features, and its 4 self-attentions' trained
    # relative biases take their gradient through graph.dropout of the
    # probabilities' cotangent.
    for name, attentions, split_dropouts in (('gpt2', 4, 0), ('llama', 4, 0), ('t5', 12, 8)):
        model_dir = os.path.join(hf, name)
        inputs = []
        for i in names:
            inputs += ['--input', f'{i}={os.path.join(model_dir, i + ".npy")}']
        for exporter in ('ts17', 'dynamo'):
            tag = f'{name}/{exporter} with dropout'
            onnx_path = os.path.join(model_dir, f'{exporter}.onnx')
            one = run(f'{tag}, one rank', onnx_path, [], inputs, 1)
            compare(f'{tag}, tensor 2', one,
                    run(f'{tag}, tensor 2', onnx_path, tensor2, inputs, 2, attentions,
                        split_dropouts))
            if exporter != 'ts17' or name == 'llama':
                continue
            # Data x tensor 2 x 2 (each data rank a micro-batch: its own
            # stream, data_seed_stride, beside the head blocks) against one
            # rank with --grad-accum 2, on the batch and its reverse.
            doubled = []
            for i in names:
                path = os.path.join(work, f'{name}_{i}4.npy')
                batch = np.load(os.path.join(model_dir, i + '.npy'))
                np.save(path, np.concatenate([batch, batch[::-1]]))
                doubled += ['--input', f'{i}={path}']
            compare(f'{tag}, data 2 x tensor 2',
                    run(f'{tag}, one rank, grad-accum 2', onnx_path,
                        ['--grad-accum', '2'], doubled, 1),
                    run(f'{tag}, data 2 x tensor 2', onnx_path,
                        ['--mesh', 'data=2,tensor=2', '--data-parallel', '--tensor-parallel'],
                        doubled, 4, attentions, split_dropouts))

if __name__ == '__main__':
    sys.exit(main())
