#!/usr/bin/env python3
"""Benchmark: one training step (forward, backward, AdamW) of a ResNet-style
CNN on this CPU, trainc against PyTorch eager (and, with --baseline-bin-dir,
another build of trainc) in one run: --rounds interleaved rounds, each
contender once per round in its own process, reported as every round's
median step and the median of the round medians.

    python3 tools/bench_cnn.py [--batch 16 --image 64 --rounds 5 --steps 12]

The model (defined here in torch.nn): a 7x7 stride-2 stem convolution,
batch norm, ReLU and a 3x3 stride-2 max pool, four stages of two basic
residual blocks (3x3 convolutions, batch norms, a strided 1x1 projection
where the width or stride changes) of widths --widths, global average
pooling and a linear classifier, trained with cross-entropy. PyTorch
exports it in training mode (TorchScript exporter, opset 17) from the
weights of torch.manual_seed(0), and trainc compiles that file with
--train; PyTorch's timing process builds the same weights from the same
seed. Both step AdamW (lr 1e-3) on one random batch (--seed), fed again at
every step. A step's time includes everything (PyTorch: zero_grad,
forward, backward, optimizer.step); trainc's is what trainc-run prints
as its median step, PyTorch's the upper median of its step times.

Interpreters: this script needs numpy only. PyTorch runs in a child
(--torch-python; default /usr/bin/python3, where Debian's python3-torch
1.13 lives; a venv with PyTorch 2.x from PyPI works the same). Threads:
TRAINC_NUM_THREADS, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
MKL_NUM_THREADS are --threads for every child, and PyTorch also calls
torch.set_num_threads. PyTorch runs twice per round: with OpenMP's own
wait policy (libgomp spins a while before it sleeps) and with
OMP_WAIT_POLICY=PASSIVE, which tools/bench_train.py's GPT needs (its
spinning stole the cores OpenBLAS computed on) but which made this CNN's
step 1.5x slower on 2 cores; compare trainc with the faster of the two.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

TORCH_CODE = r'''
import sys, time, numpy as np, torch
from torch import nn
mode, work, widths, batch, image, steps, threads, seed = sys.argv[1:9]
widths = [int(w) for w in widths.split(',')]
batch, image, steps, threads, seed = int(batch), int(image), int(steps), int(threads), int(seed)
torch.set_num_threads(threads)

class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))
    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (x if self.proj is None else self.proj(x)))

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(widths[0]), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks += [Block(cin, w, 1 if i == 0 else 2), Block(w, w, 1)]
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, 10)
    def forward(self, x, labels):
        h = self.blocks(self.stem(x)).mean(dim=(2, 3))
        return nn.functional.cross_entropy(self.head(h), labels)

torch.manual_seed(0)
net = Net().train()
rng = np.random.default_rng(seed)
x = torch.from_numpy(rng.standard_normal((batch, 3, image, image)).astype(np.float32))
y = torch.from_numpy(rng.integers(0, 10, batch).astype(np.int64))
if mode == 'export':
    import inspect
    state = {k: v.clone() for k, v in net.state_dict().items()}
    # The TorchScript exporter: PyTorch 2.9 and later default to
    # torch.export's, which writes batch norms in eval mode.
    legacy = ({'dynamo': False} if 'dynamo' in inspect.signature(torch.onnx.export).parameters
              else {})
    torch.onnx.export(net, (x, y), work + '/cnn.onnx', input_names=['x', 'labels'],
                      output_names=['loss'], opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, **legacy)
    np.save(work + '/x.npy', x.numpy())
    np.save(work + '/labels.npy', y.numpy())
    sys.exit(0)
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
times = []
for _ in range(steps):
    t = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    net(x, y).backward()
    opt.step()
    times.append(time.perf_counter() - t)
print('median_ms', 1e3 * sorted(times)[len(times) // 2], 'torch', torch.__version__)
'''


def child_env(threads, wait_policy=None):
    env = dict(os.environ)
    for k in ('TRAINC_NUM_THREADS', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS',
              'MKL_NUM_THREADS'):
        env[k] = str(threads)
    env.pop('OMP_WAIT_POLICY', None)
    if wait_policy:
        env['OMP_WAIT_POLICY'] = wait_policy
    return env


def run(cmd, env, what):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f'{what} failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}')
    return r.stdout


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--trainc-bin-dir', default=os.path.join(here, '..', 'build', 'bin'),
                    help='the build of trainc to measure (default: build/bin)')
    ap.add_argument('--baseline-bin-dir', default=None,
                    help='another build of trainc (its bin directory: its trainc and '
                         'trainc-run) to run beside it, e.g. a worktree of an earlier commit')
    ap.add_argument('--torch-python', default='/usr/bin/python3',
                    help='an interpreter with PyTorch (default: /usr/bin/python3)')
    ap.add_argument('--widths', default='32,64,128,256', help='the four stages\' widths')
    ap.add_argument('--batch', type=int, default=16)
    ap.add_argument('--image', type=int, default=64, help='image height and width')
    ap.add_argument('--steps', type=int, default=12, help='steps per process')
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--seed', type=int, default=0)
    args = ap.parse_args()
    env = child_env(args.threads)
    with tempfile.TemporaryDirectory(prefix='bench_cnn.') as work:
        common = [args.widths, str(args.batch), str(args.image), str(args.steps),
                  str(args.threads), str(args.seed)]
        run([args.torch_python, '-c', TORCH_CODE, 'export', work, *common], env,
            'the PyTorch export')
        contenders = {}
        builds = [('trainc', args.trainc_bin_dir)]
        if args.baseline_bin_dir:
            builds.append(('trainc-baseline', args.baseline_bin_dir))
        for name, bin_dir in builds:
            exe = os.path.join(work, name + '.tcx')
            run([os.path.join(bin_dir, 'trainc'), os.path.join(work, 'cnn.onnx'), '--train',
                 '--weight-decay', '0.01', '-o', exe], env, f'{name}: trainc')
            contenders[name] = [os.path.join(bin_dir, 'trainc-run'), exe,
                                '--input', 'x=' + os.path.join(work, 'x.npy'),
                                '--input', 'labels=' + os.path.join(work, 'labels.npy'),
                                '--steps', str(args.steps), '--no-progress',
                                '--log-every', str(args.steps)]
        torch_cmd = [args.torch_python, '-c', TORCH_CODE, 'time', work, *common]
        contenders['pytorch-eager'] = torch_cmd
        contenders['pytorch-passive'] = torch_cmd
        rounds = {name: [] for name in contenders}
        torch_version = '?'
        for r in range(args.rounds):
            for name, cmd in contenders.items():
                passive = name == 'pytorch-passive'
                out = run(cmd, child_env(args.threads, 'PASSIVE') if passive else env,
                          name)
                if name.startswith('pytorch'):
                    m = re.search(r'median_ms ([0-9.]+) torch (\S+)', out)
                    torch_version = m.group(2)
                else:
                    m = re.search(r'median step ([0-9.]+) ms', out)
                if not m:
                    sys.exit(f'{name}: no median in its output:\n{out[-1000:]}')
                rounds[name].append(float(m.group(1)))
            print(f'round {r + 1}: ' + ', '.join(f'{n} {v[-1]:.1f} ms' for n, v in rounds.items()),
                  flush=True)
    print(f'\nResNet-style CNN, widths {args.widths}, batch {args.batch}, '
          f'{args.image}x{args.image}, AdamW, {args.threads} thread(s), '
          f'{args.rounds} rounds of {args.steps} steps; PyTorch {torch_version}')
    base = statistics.median(rounds['trainc'])
    for name, values in rounds.items():
        med = statistics.median(values)
        print(f'  {name:16s} median {med:8.1f} ms  ({med / base:.2f}x trainc)   rounds: ' +
              ' '.join(f'{v:.1f}' for v in values))


if __name__ == '__main__':
    main()
