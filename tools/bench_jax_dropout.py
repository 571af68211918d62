#!/usr/bin/env python3
"""Benchmark: a JAX training step whose loss draws its dropout masks with
jax.random (threefry2x32 on ui32, then uniform floats by bitcast), trainc
against trainc without elementwise fusion and against JAX's own jitted
step, on this CPU.

    build/venv/bin/python tools/bench_jax_dropout.py [--batch 256 --width 1024 ...]

The model: an MLP of --layers layers of --width (tanh), inverted dropout of
rate 1/4 after each hidden layer, masks drawn inside the loss from
batch['key']; MSE loss; SGD (lr 1e-2). tools/jax_export.py writes the
StableHLO and the initial weights; trainc compiles the step twice, as
"trainc" (default flags: the threefry's integer ops run as a few fused
loops) and "unfused" (--fuse-elementwise=false: one instruction per op);
"jax" is jax.jit of the same loss's gradient step with the same SGD update,
timed with block_until_ready. Every round runs each contender once, in a
rotated order, after one warm-up round that is not reported; each prints
its median step time (trainc-run's median of --steps steps; JAX's median of
as many jitted steps after one compiling call), and its ratio to "trainc"
in the same round. The step's random bits are drawn once per step in all
three. Threads: TRAINC_NUM_THREADS=--threads for trainc-run; JAX's CPU
client uses every core of the machine (the same on a machine of --threads
cores; else run the script under `taskset -c 0-N`).

Needs jax (the project venv has it). The machine is shared and noisy: trust
ratios within a round, not absolute times.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'tools'))

RATE, LR = 0.25, 1e-2

MODEL = '''
import jax, jax.numpy as jnp
B, W, L = {batch}, {width}, {layers}
def init_params(key):
    keys = jax.random.split(key, L)
    return [{{'w': jax.random.normal(k, (W, W)) / jnp.sqrt(W), 'b': jnp.zeros(W)}} for k in keys]
def example_batch(key):
    kx, ky, kk = jax.random.split(key, 3)
    return {{'x': jax.random.normal(kx, (B, W)), 'y': jax.random.normal(ky, (B, W)),
            'key': jax.random.key_data(kk)}}
def loss_fn(params, batch):
    key = jax.random.wrap_key_data(batch['key'])
    h = batch['x']
    for i, layer in enumerate(params):
        h = h @ layer['w'] + layer['b']
        if i == L - 1:
            break
        h = jnp.tanh(h)
        key, draw = jax.random.split(key)
        keep = jax.random.uniform(draw, h.shape, jnp.float32) >= {rate}
        h = jnp.where(keep, h / (1 - {rate}), 0)
    return jnp.mean(jnp.square(h - batch['y']))
'''


def run(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd[:2])} failed: {result.stderr.strip()[:500]}")
    return result.stdout


def trainc_step_ms(trainc_run, exe, inputs, steps, env):
    out = run([trainc_run, exe, *inputs, '--steps', str(steps)], env)
    return float(re.search(r'run: median ([0-9.]+) ms', out).group(1))


def jax_stepper(model_path, steps):
    """A function timing `steps` jitted SGD steps (median ms)."""
    import importlib.util

    import jax
    spec = importlib.util.spec_from_file_location('bench_model', model_path)
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    params = model.init_params(jax.random.key(0))
    batch = model.example_batch(jax.random.key(1))

    @jax.jit
    def step(p, b):
        loss, grads = jax.value_and_grad(model.loss_fn)(p, b)
        return jax.tree.map(lambda w, g: w - LR * g, p, grads), loss

    jax.block_until_ready(step(params, batch))  # compile

    def timed():
        p, times = params, []
        for _ in range(steps):
            start = time.perf_counter()
            p, loss = step(p, batch)
            jax.block_until_ready(loss)
            times.append((time.perf_counter() - start) * 1e3)
        return sorted(times)[len(times) // 2]
    return timed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--batch', type=int, default=256, help='(default: %(default)s)')
    parser.add_argument('--width', type=int, default=1024, help='(default: %(default)s)')
    parser.add_argument('--layers', type=int, default=3,
                        help='linear layers; dropout after all but the last (default: %(default)s)')
    parser.add_argument('--steps', type=int, default=10,
                        help='steps per run (default: %(default)s)')
    parser.add_argument('--rounds', type=int, default=5, help='(default: %(default)s)')
    parser.add_argument('--threads', type=int, default=2, help='(default: %(default)s)')
    parser.add_argument('--bin-dir', default=os.path.join(REPO, 'build', 'bin'),
                        help='directory of trainc and trainc-run (default: %(default)s)')
    args = parser.parse_args()
    trainc = os.path.join(args.bin_dir, 'trainc')
    trainc_run = os.path.join(args.bin_dir, 'trainc-run')
    for tool in (trainc, trainc_run):
        if not os.access(tool, os.X_OK):
            sys.exit(f'{tool} is missing: build trainc first (tools/setup.sh)')
    env = dict(os.environ, TRAINC_NUM_THREADS=str(args.threads))
    work = tempfile.mkdtemp(prefix='bench_jax_dropout_')
    model_path = os.path.join(work, 'model.py')
    with open(model_path, 'w') as f:
        f.write(MODEL.format(batch=args.batch, width=args.width, layers=args.layers,
                             rate=RATE))
    prefix = os.path.join(work, 'model')
    run([sys.executable, os.path.join(REPO, 'tools', 'jax_export.py'), f'{model_path}:loss_fn',
         '--params-fn', f'{model_path}:init_params', '--batch-fn',
         f'{model_path}:example_batch', '-o', prefix, '--save-batch', '--no-gradient-check'])
    inputs = []
    for name in ('key', 'x', 'y'):
        inputs += ['--input', f"batch['{name}']={prefix}.batch.{name}.npy"]
    exes = {}
    for name, flags in (('trainc', []), ('unfused', ['--fuse-elementwise=false'])):
        exes[name] = os.path.join(work, f'{name}.tcx')
        run([trainc, prefix + '.mlir', '--params', prefix + '.safetensors', '--train',
             '--optimizer', 'sgd', '--lr', str(LR), *flags, '-o', exes[name]])
    jax_timed = jax_stepper(model_path, args.steps)
    contenders = {
        'trainc': lambda: trainc_step_ms(trainc_run, exes['trainc'], inputs, args.steps, env),
        'unfused': lambda: trainc_step_ms(trainc_run, exes['unfused'], inputs, args.steps, env),
        'jax': jax_timed,
    }
    names = list(contenders)
    print(f'MLP {args.layers} x {args.width}, batch {args.batch}, dropout {RATE} by '
          f'jax.random; {args.steps} steps per run, {args.threads} threads')
    for name in names:  # warm-up round
        contenders[name]()
    rounds = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        got = {name: contenders[name]() for name in order}
        for name in names:
            rounds[name].append(got[name])
        print(f'round {r + 1}: ' + ', '.join(
            f"{name} {got[name]:.2f} ms ({got[name] / got['trainc']:.2f}x)" for name in names))
    print('median of rounds: ' + ', '.join(
        f'{name} {statistics.median(rounds[name]):.2f} ms '
        f"({statistics.median(a / b for a, b in zip(rounds[name], rounds['trainc'])):.2f}x "
        'trainc)' for name in names))


if __name__ == '__main__':
    main()
