#!/usr/bin/env python3
"""GPT-2 124M training on one GPU: trainc against PyTorch eager and
torch.compile, tokens/s and MFU, in one script run.

Needs a GPU, trainc built with CUDA, and a Python with PyTorch for CUDA
(--torch-python; default: this interpreter). Without a GPU it says so and
exits 2.

Every contender trains the same model (tools/make_gpt.py's tied GPT-2,
pre-LN, GPT-2's tanh GELU (--gelu; runs before 2026-12-06 used the erf
form); 12 layers, d 768, 12 heads, vocab 50,257, seq 1,024 by default) from the same initial weights on the same batch with AdamW, in
bf16 autocast with f32 master weights (trainc: --precision bf16; PyTorch:
torch.autocast(bfloat16), fused AdamW). After --warmup steps each, the
contenders run --rounds interleaved rounds of --steps steps; every round's
median step time is printed, then the median of round medians, tokens/s,
MFU against --peak-flops (default: the H100 SXM's dense bf16 989 TFLOP/s)
with the FLOPs trainc's compiler counts for the step, and each
contender's ratio to trainc. trainc runs attention as users get it
(TRAINC_CUDA_ATTENTION unset: cuDNN's fused attention where it takes the
call); trainc-own-attention is the same executable on trainc's own
attention kernels (TRAINC_CUDA_ATTENTION=trainc): what cuDNN gains.
trainc-unpadded is trainc with --pad-classes=0 (the vocabulary's rows of
50,257 classes, not 50,304), in the same interleaved rounds: what the
padding gains. trainc-remade-stats is trainc with --attention-stats=false
(each attention gradient remakes its softmax's statistics; cuDNN's runs
the forward again): what keeping them gains. trainc-unfused-gelu is
trainc with --fuse-gelu=false (the MLP's GELU and its gradient kernels
of their own, not cuBLASLt's GELU and DGELU epilogues): what the
epilogues gain.
"""
import argparse
import csv
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
import bench_train  # noqa: E402  (the model writer and the torch.nn twin)

TORCH_CHILD = r'''
import json, sys, time
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
import bench_train
cfg = json.loads(sys.stdin.readline())  # one line: the rounds follow on stdin
torch.manual_seed(0)
model, _ = bench_train._torch_gpt(torch, cfg)
init = np.load(cfg['init'])
model.load_state_dict({k: torch.from_numpy(init[k]) for k in init.files}, strict=True)
model = model.cuda()
tokens = torch.from_numpy(np.load(cfg['tokens'])).cuda()
targets = torch.from_numpy(np.load(cfg['targets'])).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=cfg['lr'], betas=(0.9, 0.999), eps=1e-8,
                        weight_decay=cfg['weight_decay'], fused=True)
step_fn = torch.compile(model) if cfg['compile'] else model
def step():
    with torch.autocast('cuda', dtype=torch.bfloat16):
        loss = step_fn(tokens, targets)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss
for _ in range(cfg['warmup']):
    step()
torch.cuda.synchronize()
for line in sys.stdin:
    times = []
    for _ in range(cfg['steps']):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps(times), flush=True)
'''


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--layers', type=int, default=12)
    p.add_argument('--d-model', type=int, default=768)
    p.add_argument('--heads', type=int, default=12)
    p.add_argument('--vocab', type=int, default=50257)
    p.add_argument('--gelu', choices=('erf', 'tanh'), default='tanh',
                   help="the MLP's GELU in every contender: tanh, GPT-2's "
                        'approximation, or erf, exact (the runs before 2026-12-06 '
                        'used erf) (default: %(default)s)')
    p.add_argument('--seq', type=int, default=1024)
    p.add_argument('--batch', type=int, default=8, help='sequences per step')
    p.add_argument('--steps', type=int, default=10, help='steps per round')
    p.add_argument('--warmup', type=int, default=5, help='steps before the first round')
    p.add_argument('--rounds', type=int, default=6, help='interleaved rounds')
    p.add_argument('--peak-flops', type=float, default=989e12,
                   help="the GPU's dense bf16 peak FLOP/s, for MFU")
    p.add_argument('--trainc-bin-dir', default=os.path.join(REPO, 'build', 'bin'))
    p.add_argument('--torch-python', default=sys.executable)
    p.add_argument('--contenders',
                   default='trainc,trainc-own-attention,torch-eager,torch-compile',
                   help='any of trainc, trainc-own-attention '
                        '(TRAINC_CUDA_ATTENTION=trainc), trainc-unpadded '
                        '(--pad-classes=0), trainc-remade-stats '
                        '(--attention-stats=false), trainc-unfused-gelu '
                        '(--fuse-gelu=false), torch-eager, torch-compile')
    p.add_argument('--profile', action='store_true',
                   help="after the rounds, one more trainc run with --profile: where "
                        "a step's time goes, by op and by op and shapes")
    p.add_argument('--nsys', action='store_true',
                   help="after the rounds, one more trainc run (--nsys-steps steps) under "
                        "Nsight Systems: each kernel's GPU time per step, the heaviest "
                        "first (nsys from PATH, the CUDA toolkit or "
                        "/opt/nvidia/nsight-systems; else Nsight Compute's ncu over one "
                        "step; said so when there is neither)")
    p.add_argument('--nsys-steps', type=int, default=6,
                   help='steps of the --nsys run (the first one-time costs included)')
    return p.parse_args()


def find_nsys():
    """Nsight Systems' command line, or None."""
    found = shutil.which('nsys')
    if found:
        return found
    for pattern in ('/usr/local/cuda*/bin/nsys', '/opt/nvidia/nsight-systems/*/bin/nsys',
                    '/usr/local/cuda*/nsight-systems*/bin/nsys'):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


def kernel_table(tool, sums_ns, counts, steps, top, note=''):
    """Each kernel's GPU time per step (sums_ns, counts: by kernel name over
    `steps` steps), the heaviest first."""
    out = [f'{tool}: GPU time per step of each kernel over {steps} step(s) ({note}one-time '
           f'costs of the first included), heaviest first',
           f'  all kernels {sum(sums_ns.values()) / steps / 1e6:8.3f} ms per step, '
           f'{sum(counts.values()) / steps:.0f} launches']
    for name in sorted(sums_ns, key=sums_ns.get, reverse=True)[:top]:
        out.append(f'  {sums_ns[name] / steps / 1e6:8.3f} ms  {counts[name] / steps:6.1f}x  '
                   f'{name[:150]}')
    return '\n'.join(out)


def ncu_table(returncode, stdout, stderr, steps, top):
    """kernel_table() of ncu --csv's gpu__time_duration rows."""
    lines = stdout.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if returncode != 0 or start is None:
        return f'ncu failed (exit {returncode}):\n' + (stdout + stderr)[-3000:]
    sums, counts = {}, {}
    for row in csv.DictReader(lines[start:]):
        if row.get('Metric Name') != 'gpu__time_duration.sum':
            continue
        name = row['Kernel Name']
        sums[name] = sums.get(name, 0.0) + float(row['Metric Value'].replace(',', ''))
        counts[name] = counts.get(name, 0) + 1
    return kernel_table('ncu', sums, counts, steps, top, 'kernels serialized; ')


def gpu_name():
    """The first GPU's name, or None without one."""
    if not shutil.which('nvidia-smi'):
        return None
    r = subprocess.run(['nvidia-smi', '--query-gpu=name', '--format=csv,noheader'],
                       capture_output=True, text=True)
    names = r.stdout.strip().splitlines() if r.returncode == 0 else []
    return names[0] if names else None


class TraincContender:
    """trainc-run --device cuda, one process per round (steps after warm-up
    timed by the step_ms trainc-run prints). `flags`: more trainc flags
    (trainc-unpadded: --pad-classes=0, the vocabulary's GEMMs on rows of
    50,257 classes, to measure what the padding to 50,304 gains;
    trainc-remade-stats: --attention-stats=false; trainc-unfused-gelu:
    --fuse-gelu=false, what cuBLASLt's GELU epilogues gain); `env`:
    environment variables for trainc-run (trainc-own-attention:
    TRAINC_CUDA_ATTENTION=trainc)."""

    def __init__(self, args, cfg, name, flags=(), env=None):
        self.args, self.cfg = args, cfg
        self.env = dict(os.environ, **(env or {}))
        self.work = os.path.join(cfg['work'], name)
        os.makedirs(self.work, exist_ok=True)
        self.exe = os.path.join(self.work, 'step.tcx')
        trainc = os.path.join(args.trainc_bin_dir, 'trainc')
        subprocess.run([trainc, cfg['model'], '--train', '--optimizer', 'adamw',
                        '--lr', str(cfg['lr']), '--weight-decay', str(cfg['weight_decay']),
                        '--decay-all', '--precision', 'bf16', *flags, '-o', self.exe],
                       check=True)
        self.flops_per_step = None

    def command(self, steps, *extra):
        return [os.path.join(self.args.trainc_bin_dir, 'trainc-run'), self.exe,
                '--device', 'cuda', '--input', f'tokens={self.cfg["tokens"]}',
                '--input', f'targets={self.cfg["targets"]}', '--steps', str(steps),
                '--output-dir', self.work, *extra]

    def profile(self):
        """trainc-run --profile's table (its first run left out, as it
        pays one-time costs)."""
        r = subprocess.run(self.command(3, '--profile'), capture_output=True, text=True,
                           env=self.env)
        if r.returncode != 0:
            sys.exit('bench_gpu: trainc-run --profile failed:\n' + r.stderr[-3000:])
        lines = (r.stdout + r.stderr).splitlines()
        start = next((i for i, l in enumerate(lines) if l.startswith('profile:')), len(lines))
        return '\n'.join(lines[start:])

    def kernels(self, top=30):
        """The --nsys table: each kernel's GPU time per step over a run of
        --nsys-steps steps, the heaviest first."""
        nsys = find_nsys()
        if not nsys:
            ncu = shutil.which('ncu') or next(iter(sorted(glob.glob('/usr/local/cuda*/bin/ncu'))),
                                               None)
            if ncu:
                return self.kernels_ncu(ncu, top)
            return ('nsys: not found (PATH, /usr/local/cuda*/bin, '
                    '/opt/nvidia/nsight-systems/*/bin), nor ncu: no kernel table')
        steps = self.args.nsys_steps
        report = os.path.join(self.work, 'kernels')
        r = subprocess.run([nsys, 'profile', '--trace', 'cuda', '--force-overwrite', 'true',
                            '-o', report, *self.command(steps)],
                           capture_output=True, text=True, env=self.env)
        if r.returncode != 0:
            return 'nsys profile failed:\n' + (r.stdout + r.stderr)[-3000:]
        r = subprocess.run([nsys, 'stats', '--report', 'cuda_gpu_kern_sum', '--format', 'csv',
                            '--output', '-', report + '.nsys-rep'],
                           capture_output=True, text=True)
        lines = r.stdout.splitlines()
        start = next((i for i, l in enumerate(lines) if 'Total Time' in l), None)
        if r.returncode != 0 or start is None:
            return 'nsys stats failed:\n' + (r.stdout + r.stderr)[-3000:]
        rows = list(csv.DictReader(lines[start:]))
        return kernel_table('nsys', {r['Name']: float(r['Total Time (ns)']) for r in rows},
                            {r['Name']: int(r['Instances']) for r in rows}, steps, top)

    def kernels_ncu(self, ncu, top):
        """kernels() through Nsight Compute where there is no nsys: each
        kernel's gpu__time_duration over a run of one step (kernels
        serialized), summed by kernel name."""
        steps = 1
        r = subprocess.run([ncu, '--metrics', 'gpu__time_duration.sum', '--csv',
                            '--print-units', 'base', *self.command(steps)],
                           capture_output=True, text=True, env=self.env)
        return ncu_table(r.returncode, r.stdout, r.stderr, steps, top)

    def round(self):
        log = os.path.join(self.work, 'round.jsonl')
        if os.path.exists(log):
            os.remove(log)
        cmd = self.command(self.args.warmup + self.args.steps, '--log-jsonl', log)
        r = subprocess.run(cmd, capture_output=True, text=True, env=self.env)
        if r.returncode != 0:
            sys.exit('bench_gpu: trainc-run failed:\n' + r.stderr[-3000:])
        records = [json.loads(l) for l in open(log)][self.args.warmup:]
        self.flops_per_step = records[-1]['flops_per_s'] * records[-1]['step_time_s']
        return [rec['step_time_s'] * 1e3 for rec in records]


class TorchContender:
    def __init__(self, args, cfg, compile_):
        child_cfg = dict(cfg, compile=compile_, warmup=args.warmup, steps=args.steps)
        self.proc = subprocess.Popen([args.torch_python, '-c', TORCH_CHILD, TOOLS],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.proc.stdin.write(json.dumps(child_cfg) + '\n')
        self.proc.stdin.flush()

    def round(self):
        self.proc.stdin.write('round\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            sys.exit('bench_gpu: the PyTorch child ended')
        return json.loads(line)


def main():
    args = parse_args()
    name = gpu_name()
    if not name:
        print('bench_gpu: needs an NVIDIA GPU (nvidia-smi found none)', file=sys.stderr)
        return 2
    contenders = args.contenders.split(',')
    with tempfile.TemporaryDirectory() as work:
        bench_args = argparse.Namespace(
            vocab=args.vocab, seq=args.seq, batch=args.batch, d_model=args.d_model,
            heads=args.heads, layers=args.layers, mlp_ratio=4, gelu=args.gelu, seed=0,
            steps=args.steps, lr=6e-4, weight_decay=0.1, threads=1)
        cfg = bench_train.prepare(bench_args, work)
        running = {}
        for c in contenders:
            if c == 'trainc':
                running[c] = TraincContender(args, cfg, c)
            elif c == 'trainc-own-attention':
                running[c] = TraincContender(args, cfg, c,
                                             env={'TRAINC_CUDA_ATTENTION': 'trainc'})
            elif c == 'trainc-unpadded':
                running[c] = TraincContender(args, cfg, c, ('--pad-classes=0',))
            elif c == 'trainc-remade-stats':
                running[c] = TraincContender(args, cfg, c, ('--attention-stats=false',))
            elif c == 'trainc-unfused-gelu':
                running[c] = TraincContender(args, cfg, c, ('--fuse-gelu=false',))
            elif c in ('torch-eager', 'torch-compile'):
                running[c] = TorchContender(args, cfg, c == 'torch-compile')
            else:
                sys.exit(f'bench_gpu: unknown contender {c}')
        medians = {c: [] for c in running}
        for r in range(args.rounds):
            for c, contender in running.items():
                times = contender.round()
                medians[c].append(statistics.median(times))
                print(f'round {r + 1} {c}: median step {medians[c][-1]:.2f} ms', flush=True)
        tokens = args.batch * args.seq
        flops = running['trainc'].flops_per_step if 'trainc' in running else None
        print(f'\n{name}; GPT-2 shape: {args.layers} layers, d {args.d_model}, '
              f'vocab {args.vocab}, batch {args.batch} x seq {args.seq}, bf16')
        base = statistics.median(medians['trainc']) if 'trainc' in medians else None
        for c, m in medians.items():
            ms = statistics.median(m)
            line = f'{c:14s} {ms:9.2f} ms  {tokens / ms * 1e3:12,.0f} tokens/s'
            if flops:
                line += f'  MFU {flops / (ms / 1e3) / args.peak_flops:6.1%}'
            if base:
                line += f'  trainc is {ms / base:.2f}x faster'
            print(line)
        if args.profile and 'trainc' in running:
            print('\ntrainc-run --profile (each instruction waited for: slower than '
                  'the rounds above)\n' + running['trainc'].profile())
        if args.nsys and 'trainc' in running:
            print('\n' + running['trainc'].kernels())
    return 0


if __name__ == '__main__':
    sys.exit(main())
