#!/usr/bin/env python3
"""Training on samples (`trainc-run --data FILE.safetensors`) against a
float64 NumPy reference.

The model is a two-layer MLP classifier (ONNX: Flatten, MatMul, Add, Relu,
MatMul, Add, SoftmaxCrossEntropyLoss) with inputs x f32 [B, 3, 4] and labels
i64 [B], trained with plain SGD (lr 0.1, no weight decay) on 40 samples of
which 8 are held out. The reference draws its batches by the order the
runtime README documents ("Samples": each epoch the training samples
sorted by mix(seed, epoch, i)), steps the same SGD in float64, and must
agree with trainc's logged loss at every step and its final weights within
1e-5 relative: f32 round-off over 20 steps of a model this small is ~1e-6,
while a batch drawn out of order changes a loss by 1e-2 or more. Checked:
- 20 steps with B = 4 (2.5 epochs of 8 batches): every loss, the weights,
  data_position, and the held-out loss of a forward executable (the mean
  over both held-out batches of 4) against the reference's;
- another seed gives other batches (the reference's for that seed);
- 10 steps, --save-state, then --resume to 20: bit-identical to the
  uninterrupted run;
- --grad-accum 2 of a B = 2 model (input [4]) and 2 data-parallel ranks of
  B = 2 under mpirun: the same samples per step, so the same losses and
  weights within the tolerance;
- the same samples split over two files, read in order: the same run;
- bad data: each error names what is wrong and the run exits 1.
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file, save_file

M64 = (1 << 64) - 1
C1, C2, C3 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
N, HELD, CLASSES, HIDDEN = 40, 8, 5, 16
LR, STEPS = 0.1, 20
TOL = 1e-5
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMP_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1', TRAINC_NUM_THREADS='1')
RNG = np.random.default_rng(5)
W1 = RNG.normal(0, 0.5, (12, HIDDEN)).astype(np.float32)
B1 = RNG.normal(0, 0.1, HIDDEN).astype(np.float32)
W2 = RNG.normal(0, 0.5, (HIDDEN, CLASSES)).astype(np.float32)
B2 = RNG.normal(0, 0.1, CLASSES).astype(np.float32)
X = RNG.normal(0, 1, (N, 3, 4)).astype(np.float32)
LABELS = RNG.integers(0, CLASSES, N).astype(np.int64)


def mix(seed, a, b):
    z = (seed * C1 + a * C2 + b * C3 + C1) & M64
    z = ((z ^ (z >> 30)) * C2) & M64
    z = ((z ^ (z >> 27)) * C3) & M64
    return z ^ (z >> 31)


def epoch_order(seed, epoch, train):
    return sorted(range(train), key=lambda i: (mix(seed, epoch, i), i))


def batch_indices(seed, p, global_batch, train=N - HELD):
    per_epoch = train // global_batch
    e, k = divmod(p, per_epoch)
    return epoch_order(seed, e, train)[k * global_batch:(k + 1) * global_batch]


def loss_and_grads(w, x, y):
    w1, b1, w2, b2 = w
    xf = x.reshape(len(x), -1).astype(np.float64)
    h = np.maximum(xf @ w1 + b1, 0)
    z = h @ w2 + b2
    z = z - z.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(len(y)), y]))
    dz = p.copy()
    dz[np.arange(len(y)), y] -= 1
    dz /= len(y)
    dh = (dz @ w2.T) * (h > 0)
    return loss, (xf.T @ dh, dh.sum(0), h.T @ dz, dz.sum(0))


def reference(seed, steps, global_batch=4):
    w = [a.astype(np.float64) for a in (W1, B1, W2, B2)]
    losses = []
    for p in range(steps):
        idx = batch_indices(seed, p, global_batch)
        loss, g = loss_and_grads(w, X[idx], LABELS[idx])
        losses.append(loss)
        w = [a - LR * d for a, d in zip(w, g)]
    held = [loss_and_grads(w, X[N - HELD + k * 4:N - HELD + (k + 1) * 4],
                           LABELS[N - HELD + k * 4:N - HELD + (k + 1) * 4])[0]
            for k in range(HELD // 4)]
    return losses, w, float(np.mean(held))


def model(path, batch):
    nodes = [helper.make_node('Flatten', ['x'], ['xf'], axis=1),
             helper.make_node('MatMul', ['xf', 'w1'], ['a']),
             helper.make_node('Add', ['a', 'b1'], ['ab']),
             helper.make_node('Relu', ['ab'], ['h']),
             helper.make_node('MatMul', ['h', 'w2'], ['c']),
             helper.make_node('Add', ['c', 'b2'], ['logits']),
             helper.make_node('SoftmaxCrossEntropyLoss', ['logits', 'labels'], ['loss'],
                              reduction='mean')]
    inputs = [helper.make_tensor_value_info('x', TensorProto.FLOAT, [batch, 3, 4]),
              helper.make_tensor_value_info('labels', TensorProto.INT64, [batch])]
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((W1, 'w1'), (B1, 'b1'), (W2, 'w2'), (B2, 'b2'))]
    graph = helper.make_graph(nodes, 'mlp', inputs,
                              [helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
                              inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), path)


def run(args, env=None):
    return subprocess.run(args, capture_output=True, text=True, env=env)


def records(path):
    return [json.loads(line) for line in open(path)]


def rel(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def weights_error(path, w):
    got = load_file(path)
    return max(rel(got[n], a) for n, a in zip(('w1', 'b1', 'w2', 'b2'), w))


def main():
    work = sys.argv[1]
    p = lambda name: os.path.join(work, name)  # noqa: E731
    ok = True

    def check(label, good):
        nonlocal ok
        print(f'{"ok" if good else "FAIL"}: {label}')
        ok &= bool(good)

    def train(exe, out, extra=(), launcher=(), env=None):
        r = run([*launcher, 'trainc-run', exe, '--data', p('samples.safetensors'),
                 '--eval-fraction', str(HELD / N), '--log-jsonl', p(out + '.jsonl'),
                 '--save-safetensors', p(out + '.safetensors'), '--no-progress', *extra],
                env=env)
        if r.returncode != 0:
            print(f'{out}: trainc-run failed ({r.returncode}):\n{r.stdout[-800:]}{r.stderr[-800:]}')
            return None
        return r

    save_file({'x': X, 'labels': LABELS}, p('samples.safetensors'))
    model(p('b4.onnx'), 4)
    model(p('b2.onnx'), 2)
    compile_args = ['--train', '--optimizer', 'sgd', '--lr', str(LR), '--weight-decay', '0']
    for args in ([p('b4.onnx'), *compile_args, '-o', p('step.tcx')],
                 [p('b4.onnx'), '-o', p('fwd.tcx')],
                 [p('b2.onnx'), *compile_args, '--grad-accum', '2', '-o', p('accum.tcx')],
                 [p('b2.onnx'), *compile_args, '--mesh', 'data=2', '--data-parallel',
                  '-o', p('dp.tcx')]):
        r = run(['trainc', *args])
        if r.returncode != 0:
            print(f'trainc {args}: {r.stderr[-800:]} FAIL')
            return 1

    want, want_w, want_held = reference(0, STEPS)
    r = train(p('step.tcx'), 'a', ['--steps', str(STEPS), '--eval-executable', p('fwd.tcx'),
                                   '--eval-batches', '0'])
    if r is None:
        return 1
    print(r.stdout.splitlines()[0])
    log = records(p('a.jsonl'))
    losses = [x['loss'] for x in log]
    worst = max(abs(g - w) / w for g, w in zip(losses, want))
    check(f'{STEPS} steps of batch 4 (2.5 epochs): every loss within {TOL:g} of the reference '
          f'(worst {worst:.1e}); first {losses[0]:.5f}, last {losses[-1]:.5f}',
          len(losses) == STEPS and worst < TOL)
    check('data_position is the step and samples_per_s is reported',
          [x['data_position'] for x in log] == list(range(1, STEPS + 1)) and
          all(x['samples_per_s'] > 0 and x['tokens_per_s'] == 0 for x in log))
    err = weights_error(p('a.safetensors'), want_w)
    check(f'final weights within {TOL:g} (worst {err:.1e})', err < TOL)
    held = log[-1].get('eval_loss')
    check(f'held-out loss {held} vs the reference {want_held:.6f} (2 batches of 4)',
          held is not None and abs(held - want_held) / want_held < TOL)
    check('the log names the data and the batch',
          '40 samples (labels, x) from' in r.stdout and '32 for training, 8 held out; '
          'batch 4 samples' in r.stdout)

    # Another seed: other batches, still the documented ones.
    other, _, _ = reference(7, 4)
    r = train(p('step.tcx'), 'seed7', ['--steps', '4', '--seed', '7'])
    got = [x['loss'] for x in records(p('seed7.jsonl'))] if r else []
    check('seed 7 draws its own documented batches',
          len(got) == 4 and max(abs(g - w) / w for g, w in zip(got, other)) < TOL and
          abs(got[0] - losses[0]) > 1e-3)

    # Resume: bit-identical to the uninterrupted run.
    r1 = train(p('step.tcx'), 'r1', ['--steps', '10', '--save-state', p('state')])
    r2 = train(p('step.tcx'), 'r2', ['--steps', '10', '--resume', p('state')])
    got = ([x['loss'] for x in records(p('r1.jsonl'))] +
           [x['loss'] for x in records(p('r2.jsonl'))]) if r1 and r2 else []
    same = got == losses and all(
        np.array_equal(v, load_file(p('a.safetensors'))[k])
        for k, v in load_file(p('r2.safetensors')).items()) if got else False
    check('10 steps, saved, resumed for 10 more: bit-identical losses and weights', same)

    # The same samples per step through --grad-accum 2 and 2 ranks.
    for label, exe, launcher, env in (
            ('--grad-accum 2 of batch 2', p('accum.tcx'), (), None),
            ('2 data-parallel ranks of batch 2', p('dp.tcx'),
             ('mpirun', '--oversubscribe', '-np', '2'), MPI_ENV)):
        out = 'accum' if launcher == () else 'dp'
        r = train(exe, out, ['--steps', str(STEPS)], launcher, env)
        got = [x['loss'] for x in records(p(out + '.jsonl'))] if r else []
        worst = max((abs(g - w) / w for g, w in zip(got, want)), default=1)
        err = weights_error(p(out + '.safetensors'), want_w) if r else 1
        check(f'{label}: the global batch of 4 per step, losses (worst {worst:.1e}) '
              f'and weights ({err:.1e}) within {TOL:g}',
              len(got) == STEPS and worst < TOL and err < TOL)

    # Two files, concatenated in order; the first held-out batch spans both.
    save_file({'x': X[:34], 'labels': LABELS[:34]}, p('part1.safetensors'))
    save_file({'labels': LABELS[34:], 'x': X[34:]}, p('part2.safetensors'))
    parts = ['--data', p('part1.safetensors'), '--data', p('part2.safetensors'),
             '--eval-fraction', str(HELD / N), '--no-progress']
    r = run(['trainc-run', p('step.tcx'), *parts, '--steps', str(STEPS), '--log-jsonl',
             p('parts.jsonl'), '--eval-executable', p('fwd.tcx'), '--eval-batches', '0'])
    split = records(p('parts.jsonl')) if r.returncode == 0 else []
    check('the samples split over two files give the same run and held-out loss',
          [x['loss'] for x in split] == losses and
          split[-1].get('eval_loss') == log[-1].get('eval_loss'))
    # The same content hashes the same: the one file's checkpoint resumes.
    r = run(['trainc-run', p('step.tcx'), *parts, '--steps', '10', '--resume', p('state'),
             '--log-jsonl', p('parts_resumed.jsonl')])
    got = [x['loss'] for x in records(p('parts_resumed.jsonl'))] if r.returncode == 0 else []
    check('a run saved on one file continues on the same samples in two',
          got == losses[10:])

    ok &= errors(work, p, check)
    print('PASS' if ok else 'FAIL')
    return 0 if ok else 1


def lm_ids(work, p, check):
    """A language model's token ids from samples: checked against the
    vocabulary before the first step; a token file is one by its magic even
    when named .safetensors."""
    vocab = 6
    nodes = [helper.make_node('Gather', ['emb', 'tokens'], ['h'], axis=0),
             helper.make_node('MatMul', ['h', 'out'], ['logits']),
             helper.make_node('Transpose', ['logits'], ['lt'], perm=[0, 2, 1]),
             helper.make_node('SoftmaxCrossEntropyLoss', ['lt', 'targets'], ['loss'])]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, [2, 4])
              for n in ('tokens', 'targets')]
    inits = [numpy_helper.from_array(RNG.normal(0, 1, (vocab, 3)).astype(np.float32), 'emb'),
             numpy_helper.from_array(RNG.normal(0, 1, (3, vocab)).astype(np.float32), 'out')]
    graph = helper.make_graph(nodes, 'lm', inputs,
                              [helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
                              inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]),
              p('lm.onnx'))
    r = run(['trainc', p('lm.onnx'), '--train', '-o', p('lm.tcx')])
    if r.returncode != 0:
        check(f'trainc lm.onnx: {r.stderr[-400:]}', False)
        return False
    ids = RNG.integers(0, vocab, (12, 4)).astype(np.int64)
    ok = True
    for label, name, tokens, message in (
            ('ids in the vocabulary', 'lm_ok', ids, None),
            ('a negative id', 'lm_bad1', np.where(np.arange(4) == 2, -1, ids),
             'lm_bad1.safetensors, sample 0: token id -1 at element 2 of \'tokens\' is '
             'negative'),
            ('an id past the vocabulary', 'lm_bad2',
             np.where(np.arange(12)[:, None] == 7, vocab, ids),
             'lm_bad2.safetensors, sample 7: token id 6 at element 0 of \'tokens\' is '
             'outside the model\'s vocabulary of 6 ids')):
        path = p(name + '.safetensors')
        save_file({'tokens': tokens, 'targets': ids}, path)
        r = run(['trainc-run', p('lm.tcx'), '--data', path, '--steps', '3', '--no-progress'])
        good = (r.returncode == 0 if message is None else
                r.returncode == 1 and message in r.stderr)
        check(f'language model samples, {label}: exit {r.returncode} '
              f'{r.stderr.strip()[:200]}', good)
        ok &= good
    # A trainc token file named .safetensors is read as tokens.
    header = b'TRAINCTK' + struct.pack('<IIQ', 1, 2, 200)
    open(p('tokens.safetensors'), 'wb').write(
        header + RNG.integers(0, vocab, 200).astype('<u2').tobytes())
    r = run(['trainc-run', p('lm.tcx'), '--data', p('tokens.safetensors'), '--steps', '2',
             '--no-progress'])
    good = r.returncode == 0 and '200 tokens (tokens)' in r.stdout
    check(f'a token file named .safetensors is read as tokens: exit {r.returncode}', good)
    # More samples than the runtime takes (zero bytes each).
    huge = json.dumps({'e': {'dtype': 'F32', 'shape': [1 << 33, 0],
                             'data_offsets': [0, 0]}}).encode()
    huge += b' ' * (-len(huge) % 8)
    open(p('huge.safetensors'), 'wb').write(struct.pack('<Q', len(huge)) + huge)
    r = run(['trainc-run', p('step.tcx'), '--data', p('huge.safetensors'), '--steps', '1'])
    good = r.returncode == 1 and 'more than 4,294,967,296 samples' in r.stderr
    check(f'2^33 samples: exit {r.returncode}, {r.stderr.strip()[:200]}', good)
    return ok & good


def errors(work, p, check):
    cases = [
        ('no array for an input', {'x': X}, 'inputs with no array of that name: '
         "'labels' i64[4]"),
        ('an array no input takes', {'x': X, 'labels': LABELS, 'mask': X},
         "arrays that are no input: 'mask' (F32 [3, 4] per sample)"),
        ('float64 samples for an f32 input', {'x': X.astype(np.float64), 'labels': LABELS},
         "'x' is F64 [3, 4] per sample in the data but f32[4, 3, 4] in the executable"),
        ('another sample shape', {'x': X.reshape(N, 12), 'labels': LABELS},
         "'x' is F32 [12] per sample in the data but f32[4, 3, 4] in the executable"),
        ('arrays of different lengths', {'x': X, 'labels': LABELS[:30]},
         'every array needs one entry per sample'),
        ('too few training samples for a batch', {'x': X[:3], 'labels': LABELS[:3]},
         'the training split has 3 samples but one batch needs 4'),
        ('no samples', {'x': X[:0], 'labels': LABELS[:0]}, 'holds no samples'),
        ('a scalar array', {'x': X, 'labels': LABELS, 's': np.float32(1)},
         "'s' is a scalar; each array holds its samples on its first axis"),
    ]
    ok = lm_ids(work, p, check)
    for i, (label, arrays, message) in enumerate(cases):
        path = os.path.join(work, f'bad{i}.safetensors')
        save_file({k: np.asarray(v) for k, v in arrays.items()}, path)
        r = run(['trainc-run', p('step.tcx'), '--data', path, '--steps', '1'])
        good = r.returncode == 1 and message in r.stderr and 'Traceback' not in r.stderr
        check(f'{label}: exit {r.returncode}, {r.stderr.strip()[:300]}', good)
        ok &= good
    # Inputs of two batch sizes: one sample feeds every input.
    nodes = [helper.make_node('Mul', ['a', 'p'], ['ap']),
             helper.make_node('Mul', ['b', 'p'], ['bp']),
             helper.make_node('ReduceSum', ['ap'], ['sa'], keepdims=0),
             helper.make_node('ReduceSum', ['bp'], ['sb'], keepdims=0),
             helper.make_node('Add', ['sa', 'sb'], ['loss'])]
    graph = helper.make_graph(
        nodes, 'two', [helper.make_tensor_value_info('a', TensorProto.FLOAT, [4, 3]),
                       helper.make_tensor_value_info('b', TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
        [numpy_helper.from_array(np.ones(3, np.float32), 'p')])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]),
              p('two.onnx'))
    run(['trainc', p('two.onnx'), '--train', '--optimizer', 'sgd', '-o', p('two.tcx')])
    save_file({'a': X[:, :, 0].copy(), 'b': X[:, :, 1].copy()}, p('two.safetensors'))
    r = run(['trainc-run', p('two.tcx'), '--data', p('two.safetensors'), '--steps', '1'])
    good = r.returncode == 1 and "inputs have batches of different sizes" in r.stderr
    check(f'inputs of two batch sizes: exit {r.returncode}, {r.stderr.strip()[:200]}', good)
    ok &= good
    # A truncated file, mixed kinds, token-input flags, another file's arrays.
    data = open(p('samples.safetensors'), 'rb').read()
    open(p('cut.safetensors'), 'wb').write(data[:len(data) // 2])
    open(p('text.txt'), 'w').write('tokens, not samples')
    save_file({'x': X, 'y': LABELS}, p('other.safetensors'))
    for label, args, message in (
            ('a truncated file', ['--data', p('cut.safetensors')], 'cut.safetensors'),
            ('samples and tokens', ['--data', p('samples.safetensors'), '--data', p('text.txt'),
                                    '--data-format', 'samples'], 'text.txt'),
            ('tokens then samples', ['--data', p('text.txt'), '--data',
                                     p('samples.safetensors')],
             'holds samples but'),
            ('--tokens-input', ['--data', p('samples.safetensors'), '--tokens-input', 'x'],
             'sample data feeds each input the array of its name'),
            ('files with other arrays', ['--data', p('samples.safetensors'), '--data',
                                         p('other.safetensors')],
             "'y' is not in"),
            ('an evaluation batch the held-out part cannot fill',
             ['--data', p('samples.safetensors'), '--eval-fraction', '0.05',
              '--eval-executable', p('fwd.tcx')],
             'the held-out split has 2 samples, fewer than one evaluation batch of 4')):
        r = run(['trainc-run', p('step.tcx'), *args, '--steps', '1'])
        good = r.returncode == 1 and message in r.stderr
        check(f'{label}: exit {r.returncode}, {r.stderr.strip()[:300]}', good)
        ok &= good
    return ok


if __name__ == '__main__':
    sys.exit(main())
