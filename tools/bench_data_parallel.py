#!/usr/bin/env python3
"""Benchmark: data parallelism on 2 MPI ranks against 1 rank, and against
PyTorch DistributedDataParallel (gloo) on the same model, in one script run.

    python3 tools/bench_data_parallel.py [--rounds 4 --steps 20 --layers 2 ...]

Contenders, each with the same per-rank batch (--batch) and one thread per
rank (TRAINC_NUM_THREADS, OMP/OPENBLAS/MKL_NUM_THREADS = 1, torch threads 1):
  trainc x1   trainc-run on the 1-rank training step
  trainc x2   mpirun -np 2 trainc-run on the `--mesh data=2 --data-parallel`
              step (global batch 2 x --batch); also with --bucket-bytes 0
              (one all-reduce per gradient instead of 25 MiB buckets)
  trainc x2 sync  the same with --overlap-collectives=false (each
              collective completes where it is issued: no overlap)
  trainc x2 ZeRO-S  the same with --zero S, S in --zero-stages (default
              1,2,3): what splitting the optimizer state, the gradients and
              the parameters costs in step time and exposed communication
  trainc TP x2  mpirun -np 2 on the `--mesh tensor=2 --tensor-parallel`
              step: Megatron tensor parallelism, both ranks on the same
              batch of --batch (strong scaling: its speedup is trainc x1's
              step time over its own)
  torch x1    the same GPT in torch.nn, AdamW, one process
  torch DDP x2  two processes (torch.multiprocessing), gloo, DDP with its
              default 25 MB buckets and overlap of the gradient all-reduce
              with the backward pass
Rounds interleave the contenders (every contender once per round, after one
warm-up round that is not reported); each prints the median step time of its
steps 2..N. Reported per round and as the median over rounds: step ms,
tokens/s of all ranks, the 2-rank scaling efficiency (tokens/s at 2 ranks /
2 x tokens/s at 1 rank), and trainc's exposed communication per step
(comm_ms: time a rank waits in collectives, the communication compute did
not hide).

On a machine with 2 cores, two ranks of one thread each use both; 1 rank
of one thread leaves one core idle, so perfect scaling is an efficiency of
1.0. --torch-python names an interpreter with torch (default: this one, or
/work/oracle-venv/bin/python); without torch the torch rows are skipped.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
ONE_THREAD = {'TRAINC_NUM_THREADS': '1', 'OMP_NUM_THREADS': '1',
              'OPENBLAS_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1',
              'OMP_WAIT_POLICY': 'PASSIVE', 'OMPI_ALLOW_RUN_AS_ROOT': '1',
              'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1'}


def median(values):
    return sorted(values)[len(values) // 2]


# ---------------------------------------------------------------------------
# PyTorch child (run under --torch-python)

def torch_worker(rank, cfg, out):
    """One rank of the torch run: rank 0 puts its step times (ms) on `out`."""
    import torch
    import torch.distributed as dist
    sys.path.insert(0, TOOLS_DIR)
    import bench_train
    world = cfg['world']
    torch.set_num_threads(1)
    if world > 1:
        dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{cfg["port"]}',
                                rank=rank, world_size=world)
    model, _ = bench_train._torch_gpt(torch, cfg)
    init = np.load(cfg['init'])
    model.load_state_dict({k: torch.from_numpy(init[k]) for k in init.files})
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    tokens = torch.from_numpy(np.load(cfg['tokens']))
    targets = torch.from_numpy(np.load(cfg['targets']))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    times, _ = bench_train.torch_step_times(model, opt, tokens, targets, cfg['steps'])
    if rank == 0:
        out.put(times)
    if world > 1:
        dist.destroy_process_group()


def torch_child(cfg_path):
    """Prints one JSON line: the step times (ms) of rank 0."""
    import torch.multiprocessing as mp
    with open(cfg_path) as f:
        cfg = json.load(f)
    ctx = mp.get_context('spawn')
    out = ctx.Queue()
    procs = [ctx.Process(target=torch_worker, args=(r, cfg, out))
             for r in range(cfg['world'])]
    for p in procs:
        p.start()
    times = out.get()
    for p in procs:
        p.join()
    print('RESULT ' + json.dumps(times))


# ---------------------------------------------------------------------------
# The driver

def run_trainc(args, exe, ranks, work, data_ranks=None):
    """(median step ms, median exposed comm ms) of `exe` on `ranks`, fed
    the global batch of `data_ranks` (default: ranks) data-parallel ranks."""
    data_ranks = data_ranks or ranks
    log = os.path.join(work, f'log{ranks}.jsonl')
    if os.path.exists(log):
        os.remove(log)
    command = [os.path.join(args.bin_dir, 'trainc-run'), exe,
               '--input', f'tokens={work}/tokens_global{data_ranks}.npy',
               '--input', f'targets={work}/targets_global{data_ranks}.npy',
               '--steps', str(args.steps), '--no-progress', '--log-jsonl', log,
               '--output-dir', os.path.join(work, f'out{ranks}')]
    if ranks > 1:
        command = ['mpirun', '--oversubscribe', '-np', str(ranks)] + command
    subprocess.run(command, check=True, capture_output=True,
                   env=dict(os.environ, **ONE_THREAD))
    with open(log) as f:
        records = [json.loads(line) for line in f][1:]
    return (median([r['step_time_s'] * 1e3 for r in records]),
            median([r.get('comm_s', 0) * 1e3 for r in records]))


def run_torch(args, cfg, world, work):
    path = os.path.join(work, f'torch{world}.json')
    with open(path, 'w') as f:
        json.dump(dict(cfg, world=world, port=29500 + world), f)
    r = subprocess.run([args.torch_python, os.path.abspath(__file__), '--torch-child', path],
                       capture_output=True, text=True,
                       env=dict(os.environ, **ONE_THREAD))
    if r.returncode != 0:
        sys.exit(f'torch (world {world}) failed:\n{r.stderr[-3000:]}')
    times = json.loads(r.stdout.split('RESULT ', 1)[1])
    return median(times[1:])


def find_torch_python(args):
    for python in ([args.torch_python] if args.torch_python else
                   [sys.executable, '/work/oracle-venv/bin/python']):
        if python and shutil.which(python) and subprocess.run(
                [python, '-c', 'import torch, torch.distributed'],
                capture_output=True).returncode == 0:
            return python
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--bin-dir', default=os.path.join(os.path.dirname(TOOLS_DIR), 'build', 'bin'))
    parser.add_argument('--rounds', type=int, default=4)
    parser.add_argument('--steps', type=int, default=20)
    parser.add_argument('--layers', type=int, default=2)
    parser.add_argument('--d-model', type=int, default=256)
    parser.add_argument('--heads', type=int, default=4)
    parser.add_argument('--seq', type=int, default=128)
    parser.add_argument('--batch', type=int, default=4, help='per rank')
    parser.add_argument('--vocab', type=int, default=512)
    parser.add_argument('--zero-stages', default='1,2,3',
                        help='ZeRO stages to run on 2 ranks ("" for none)')
    parser.add_argument('--torch-python')
    parser.add_argument('--torch-child', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_child:
        return torch_child(args.torch_child)
    if not shutil.which('mpirun'):
        sys.exit('bench_data_parallel.py needs mpirun (apt-get install openmpi-bin)')
    args.torch_python = find_torch_python(args)

    import onnx
    from onnx import numpy_helper
    sys.path.insert(0, TOOLS_DIR)
    import make_gpt
    with tempfile.TemporaryDirectory() as work:
        gpt = make_gpt.GptConfig(vocab=args.vocab, seq=args.seq, batch=args.batch,
                                 d_model=args.d_model, heads=args.heads, layers=args.layers,
                                 mlp_ratio=4, tied=True, seed=0)
        model = make_gpt.build_model(gpt)
        onnx.save(model, os.path.join(work, 'model.onnx'))
        init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        np.savez(os.path.join(work, 'init.npz'), **init)
        data = np.random.default_rng(1).integers(0, args.vocab, (2 * args.batch, args.seq + 1))
        for ranks in (1, 2):
            np.save(f'{work}/tokens_global{ranks}.npy', data[:ranks * args.batch, :-1].copy())
            np.save(f'{work}/targets_global{ranks}.npy', data[:ranks * args.batch, 1:].copy())
        np.save(f'{work}/tokens.npy', data[:args.batch, :-1].copy())
        np.save(f'{work}/targets.npy', data[:args.batch, 1:].copy())
        trainc = os.path.join(args.bin_dir, 'trainc')
        exe1, exe2 = os.path.join(work, 'one.tcx'), os.path.join(work, 'dp2.tcx')
        exe2u = os.path.join(work, 'dp2_unbucketed.tcx')
        exe2s = os.path.join(work, 'dp2_sync.tcx')
        subprocess.run([trainc, f'{work}/model.onnx', '--train', '--mesh', 'data=2',
                        '--data-parallel', '--overlap-collectives=false', '-o', exe2s],
                       check=True)
        subprocess.run([trainc, f'{work}/model.onnx', '--train', '-o', exe1], check=True)
        for exe, bucket in ((exe2, '26214400'), (exe2u, '0')):
            subprocess.run([trainc, f'{work}/model.onnx', '--train', '--mesh', 'data=2',
                            '--data-parallel', '--bucket-bytes', bucket, '-o', exe], check=True)
        exe_tp = os.path.join(work, 'tp2.tcx')
        subprocess.run([trainc, f'{work}/model.onnx', '--train', '--mesh', 'tensor=2',
                        '--tensor-parallel', '-o', exe_tp], check=True)
        zero = {}
        for stage in [int(x) for x in args.zero_stages.split(',') if x]:
            zero[stage] = os.path.join(work, f'zero{stage}.tcx')
            subprocess.run([trainc, f'{work}/model.onnx', '--train', '--mesh', 'data=2',
                            '--data-parallel', '--zero', str(stage), '-o', zero[stage]],
                           check=True)
        cfg = dict(init=f'{work}/init.npz', tokens=f'{work}/tokens.npy',
                   targets=f'{work}/targets.npy', vocab=args.vocab, seq=args.seq,
                   d_model=args.d_model, heads=args.heads, layers=args.layers,
                   mlp_ratio=4, gelu=gpt.gelu, steps=args.steps)
        print(f'model: {make_gpt.parameter_count(model):,} parameters, {args.layers} layers, '
              f'd_model {args.d_model}, seq {args.seq}, batch {args.batch} per rank, '
              f'{args.steps} AdamW steps per run, 1 thread per rank; torch: '
              f'{args.torch_python or "not found (skipped)"}')
        tokens = args.batch * args.seq
        rows = []
        for round_index in range(args.rounds + 1):
            t1, _ = run_trainc(args, exe1, 1, work)
            t2, comm = run_trainc(args, exe2, 2, work)
            t2u, commu = run_trainc(args, exe2u, 2, work)
            t2s, comms = run_trainc(args, exe2s, 2, work)
            row = {'trainc x1': t1, 'trainc x2': t2, 'comm': comm,
                   'trainc x2 unbucketed': t2u, 'comm unbucketed': commu,
                   'trainc x2 sync': t2s, 'comm sync': comms}
            for stage, exe in zero.items():
                row[f'ZeRO-{stage}'], row[f'comm ZeRO-{stage}'] = run_trainc(
                    args, exe, 2, work)
            row['TP x2'], row['comm TP'] = run_trainc(args, exe_tp, 2, work, data_ranks=1)
            if args.torch_python:
                row['torch x1'] = run_torch(args, cfg, 1, work)
                row['torch DDP x2'] = run_torch(args, cfg, 2, work)
            if round_index == 0:
                continue  # warm-up
            rows.append(row)
            line = f'round {round_index}:'
            for name in ('trainc x1', 'trainc x2', 'torch x1', 'torch DDP x2'):
                if name in row:
                    ranks = 2 if 'x2' in name else 1
                    line += f'  {name} {row[name]:.1f} ms ({ranks * tokens / row[name] * 1e3:,.0f} tok/s)'
            line += (f'  trainc comm {comm:.2f} ms; sync x2 {t2s:.1f} ms, comm '
                     f'{comms:.2f} ms; unbucketed x2 {t2u:.1f} ms, '
                     f'comm {commu:.2f} ms')
            for stage in zero:
                line += (f'; ZeRO-{stage} {row[f"ZeRO-{stage}"]:.1f} ms, '
                         f'comm {row[f"comm ZeRO-{stage}"]:.2f} ms')
            line += f'; TP x2 {row["TP x2"]:.1f} ms, comm {row["comm TP"]:.2f} ms'
            print(line, flush=True)
        print('\nmedians over rounds:')
        med = {k: median([r[k] for r in rows]) for k in rows[0]}
        for name in ('trainc x1', 'trainc x2', 'torch x1', 'torch DDP x2'):
            if name in med:
                ranks = 2 if 'x2' in name else 1
                print(f'  {name:13s} {med[name]:7.1f} ms/step  '
                      f'{ranks * tokens / med[name] * 1e3:9,.0f} tokens/s')
        print(f'  trainc 2-rank scaling efficiency: {med["trainc x1"] / med["trainc x2"]:.2f} '
              f'(exposed communication {med["comm"]:.2f} ms/step, '
              f'{med["comm"] / med["trainc x2"]:.0%} of the step)')
        print(f'  without overlap (--overlap-collectives=false): '
              f'{med["trainc x1"] / med["trainc x2 sync"]:.2f} '
              f'(exposed communication {med["comm sync"]:.2f} ms/step)')
        print(f'  without buckets (one all-reduce per gradient): '
              f'{med["trainc x1"] / med["trainc x2 unbucketed"]:.2f} '
              f'(exposed communication {med["comm unbucketed"]:.2f} ms/step)')
        for stage in zero:
            print(f'  trainc x2 ZeRO-{stage}: {med[f"ZeRO-{stage}"]:.1f} ms/step, '
                  f'{med[f"ZeRO-{stage}"] / med["trainc x2"]:.2f} x data parallel '
                  f'(exposed communication {med[f"comm ZeRO-{stage}"]:.2f} ms/step)')
        print(f'  trainc TP x2 (same batch as x1): {med["TP x2"]:.1f} ms/step, speedup '
              f'{med["trainc x1"] / med["TP x2"]:.2f} over 1 rank (exposed communication '
              f'{med["comm TP"]:.2f} ms/step)')
        if 'torch x1' in med:
            print(f'  torch DDP 2-rank scaling efficiency: '
                  f'{med["torch x1"] / med["torch DDP x2"]:.2f}')
            print(f'  trainc x2 / torch DDP x2 step time: {med["trainc x2"] / med["torch DDP x2"]:.2f}')


if __name__ == '__main__':
    sys.exit(main())
