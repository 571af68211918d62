#!/usr/bin/env python3
"""The main job: create a small GPT, compile it with trainc, train it with
trainc-run on the bytes of text this machine already has, keep the weights.

    ./tools/setup.sh && build/venv/bin/python tools/train_gpt.py

Steps (each printed with its command, so you can rerun any of them):
1. tools/make_gpt.py writes a byte-level GPT (vocabulary 256) as ONNX;
2. `trainc --train` compiles its AdamW training step (cosine schedule with
   warmup), `trainc` its forward pass for the held-out loss;
3. `trainc-run --data` trains it on the licence texts under
   /usr/share/common-licenses (10% held out), with a progress bar on a
   terminal and a JSONL log;
4. the trained weights are written as safetensors and as the ONNX model with
   its initializers replaced (onnxruntime runs it).

Checkpoints go to OUT_DIR/state every --save-every steps (and when Ctrl-C
or SIGTERM stops the run); `--resume` continues an interrupted or killed
run from the newest one, for the steps that are left.

At the end it compares the held-out loss with ln(256) = 5.545, the loss of a
uniform guess, and exits non-zero if the model did not learn. It trains on
the GPU when trainc was built with CUDA and a GPU is present (--device
auto), and then checks the first steps against the CPU (--verify-steps);
else on the CPU.
"""
import argparse
import glob
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, interruptible=False):
    """Runs cmd, echoing it; exits on failure. With `interruptible`, Ctrl-C
    goes to cmd alone (trainc-run then finishes its step, writes the weights
    and exits 130), and this returns True when that happened."""
    print('$ ' + ' '.join(shlex.quote(c) for c in cmd), flush=True)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if interruptible else None
    try:
        # The child gets the default SIGINT action back before it starts.
        result = subprocess.run(
            cmd, preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            if interruptible else None)
    finally:
        if interruptible:
            signal.signal(signal.SIGINT, previous)
    if interruptible and result.returncode == 130:
        return True
    if result.returncode != 0:
        sys.exit(f'train_gpt: {os.path.basename(cmd[0])} failed '
                 f'(exit {result.returncode})')
    return False


def gpu_present():
    smi = shutil.which('nvidia-smi')
    if not smi:
        return False
    r = subprocess.run([smi, '-L'], capture_output=True, text=True)
    return r.returncode == 0 and 'GPU' in r.stdout


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] + ' ' + __doc__.splitlines()[1],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument('--out-dir', default=os.path.join(ROOT, 'build', 'gpt'),
                        help='where the model, executables, log and weights go')
    parser.add_argument('--data', nargs='+', metavar='FILE',
                        help='text files to train on, their bytes the tokens '
                             '(default: every file in /usr/share/common-licenses)',
                        default=argparse.SUPPRESS)
    parser.add_argument('--steps', type=int, default=1500, help='training steps')
    parser.add_argument('--layers', type=int, default=2, help='transformer blocks')
    parser.add_argument('--d-model', type=int, default=128, help='model width')
    parser.add_argument('--heads', type=int, default=4, help='attention heads')
    parser.add_argument('--seq', type=int, default=64, help='sequence length')
    parser.add_argument('--batch', type=int, default=16, help='sequences per step')
    parser.add_argument('--lr', type=float, default=3e-3, help='peak learning rate')
    parser.add_argument('--warmup-steps', type=int, default=30,
                        help='steps of linear learning-rate warmup before the cosine decay')
    parser.add_argument('--eval-every', type=int, default=250,
                        help='steps between held-out evaluations')
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of the initial weights and of the batches')
    parser.add_argument('--save-every', type=int, default=250,
                        help='checkpoint interval in steps (default 250)')
    parser.add_argument('--resume', action='store_true',
                        help='continue the run saved in OUT_DIR/state (after Ctrl-C, '
                             'SIGTERM or a kill) instead of starting afresh')
    parser.add_argument('--precision', default='f32', choices=('f32', 'tf32', 'bf16', 'fp16'),
                        help='trainc --precision: tf32, f32 matmuls on TF32 tensor cores '
                             '(a GPU speed-up; the CPU emulates it, slower); bf16/fp16, '
                             '16-bit matmuls and attention with f32 master weights (fp16 '
                             'with dynamic loss scaling); on a CPU without bf16 arithmetic '
                             'this saves memory, not time')
    parser.add_argument('--recompute', default='none',
                        help='trainc --recompute: none, selective, full or budget=BYTES '
                             '(activation checkpointing)')
    parser.add_argument('--device', default='auto',
                        help='trainc-run --device: auto (the GPU when trainc has CUDA '
                             'and one is present, else the CPU), cpu, cuda or cuda:N')
    parser.add_argument('--verify-steps', type=int, default=2,
                        help='on a GPU, steps also run on the CPU and compared '
                             '(trainc-run --verify-steps); 0: none')
    parser.add_argument('--bin-dir', default=os.path.join(ROOT, 'build', 'bin'),
                        help='where trainc and trainc-run are')
    args = parser.parse_args()

    trainc = os.path.join(args.bin_dir, 'trainc')
    trainc_run = os.path.join(args.bin_dir, 'trainc-run')
    for tool in (trainc, trainc_run):
        if not os.access(tool, os.X_OK):
            sys.exit(f'train_gpt: {tool} is missing: run ./tools/setup.sh first')
    if 'data' not in args:
        # Each text once (GPL, LGPL and GFDL are links to their latest).
        texts = {}
        for f in sorted(glob.glob('/usr/share/common-licenses/*')):
            texts.setdefault(os.path.realpath(f), f)
        args.data = sorted(texts.values())
    missing = [f for f in args.data if not os.path.isfile(f)]
    if missing:
        sys.exit(f'train_gpt: not a file: {missing[0]}')
    data = args.data
    if not data:
        sys.exit('train_gpt: no data files (give text files with --data)')
    if args.steps < 2:
        sys.exit('train_gpt: --steps must be at least 2')
    if args.warmup_steps >= args.steps:
        sys.exit(f'train_gpt: --warmup-steps ({args.warmup_steps}) must be '
                 f'below --steps ({args.steps})')
    on_gpu = args.device.startswith('cuda') or (args.device == 'auto' and gpu_present())
    if on_gpu:
        print(f'train_gpt: a GPU is present: --device {args.device} trains on it when '
              'trainc was built with CUDA (trainc-run names the device it fails on '
              f'otherwise); its first {args.verify_steps} step(s) are also run on the '
              'CPU and compared, a self-check of the GPU kernels (--verify-steps 0 '
              'skips it; --device cpu trains on the CPU)')
    os.makedirs(args.out_dir, exist_ok=True)
    out = lambda name: os.path.join(args.out_dir, name)  # noqa: E731

    run([sys.executable, os.path.join(ROOT, 'tools', 'make_gpt.py'),
         out('gpt.onnx'), '--vocab', '256', '--seq', str(args.seq),
         '--batch', str(args.batch), '--d-model', str(args.d_model),
         '--heads', str(args.heads), '--layers', str(args.layers),
         '--seed', str(args.seed)])
    run([trainc, out('gpt.onnx'), '--train', '--optimizer', 'adamw',
         '--lr', '%g' % args.lr, '--weight-decay', '0.01',
         '--lr-schedule', 'cosine', '--warmup-steps', str(args.warmup_steps),
         '--total-steps', str(args.steps), '--min-lr', '%g' % (args.lr / 10),
         '--clip-grad-norm', '1.0', '--precision', args.precision,
         '--recompute', args.recompute, '-o', out('step.tcx')])
    run([trainc, out('gpt.onnx'), '--precision', args.precision, '-o', out('forward.tcx')])
    log, state = out('train.jsonl'), out('state')
    done = 0
    if args.resume and os.path.exists(os.path.join(state, 'latest')):
        name = open(os.path.join(state, 'latest')).read().strip()
        done = json.load(open(os.path.join(state, name, 'manifest.json')))['step']
    elif args.resume:
        sys.exit(f'train_gpt: --resume: no checkpoint in {state}')
    else:
        for stale in (log, state):
            if os.path.isdir(stale):
                shutil.rmtree(stale)
            elif os.path.exists(stale):
                os.remove(stale)
    if done >= args.steps:
        sys.exit(f'train_gpt: --resume: {state} already holds all {args.steps} steps')
    cmd = [trainc_run, out('step.tcx'), '--steps', str(args.steps - done),
           '--device', args.device,
           '--verify-steps', str(args.verify_steps if on_gpu else 0),
           '--save-state', state, '--save-every', str(args.save_every),
           '--keep-last', '2',
           '--seed', str(args.seed), '--eval-executable', out('forward.tcx'),
           '--eval-every', str(args.eval_every), '--log-jsonl', log,
           '--log-every', str(max(1, args.steps // 30)),
           '--save-safetensors', out('gpt.safetensors'),
           '--export-onnx', out('gpt_trained.onnx')]
    for f in data:
        cmd += ['--data', f]
    if done:
        cmd += ['--resume', state]
    interrupted = run(cmd, interruptible=True)

    records = [json.loads(line) for line in open(log)]
    evals = [r['eval_loss'] for r in records if 'eval_loss' in r]
    uniform = math.log(256)
    if interrupted:
        print(f'\ninterrupted after {len(records)} steps; the weights so far '
              f'are in {out("gpt.safetensors")} and {out("gpt_trained.onnx")}; '
              f'continue with: {sys.argv[0]} --resume')
        return 130
    final = evals[-1] if evals and evals[-1] is not None else float('nan')
    print(f'\nheld-out loss {final:.3f} nats/byte after {len(records)} steps '
          f'(uniform guess: ln 256 = {uniform:.3f}; '
          f'{final / math.log(2):.2f} bits/byte)')
    print(f'weights: {out("gpt.safetensors")} (safetensors), '
          f'{out("gpt_trained.onnx")} (ONNX with the trained initializers)')
    print(f'log: {log} (one JSON record per step)')
    if not final < uniform - 1.0:
        sys.exit('train_gpt: the held-out loss is not well below the uniform '
                 'guess: the model did not learn')
    return 0


if __name__ == '__main__':
    sys.exit(main())
