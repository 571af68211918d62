"""What the tests of runs on several MPI ranks share: the launch environment,
the check list, the byte data, training runs and the comparison of their
curves and trained weights."""
import json
import os
import subprocess
import time

import numpy as np

MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1',
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               # Several ranks share these cores: one thread each.
               OMP_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1',
               TRAINC_NUM_THREADS='1')
failures = []


def check(ok, what):
    print(('ok:   ' if ok else 'FAIL: ') + what)
    if not ok:
        failures.append(what)


def finish(what):
    """Prints the summary; the exit status."""
    print('FAILED: ' + '; '.join(failures) if failures else f'all {what} checks passed')
    return 1 if failures else 0


def mpirun(n, command, timeout=300, env=None):
    return subprocess.run(['mpirun', '--oversubscribe', '-np', str(n)] + command,
                          capture_output=True, text=True, env=env or MPI_ENV,
                          timeout=timeout)


def one_rank(command, timeout=300):
    return subprocess.run(command, capture_output=True, text=True, env=MPI_ENV,
                          timeout=timeout)


def write_byte_data(path, words=30000):
    """Text of a few words, bytes inside tinygpt's vocabulary of 128."""
    rng = np.random.default_rng(3)
    vocabulary = [w.encode() for w in
                  'the cat sat on a mat and the dog ran far from home .'.split()]
    with open(path, 'wb') as f:
        f.write(b' '.join(vocabulary[i] for i in rng.integers(0, len(vocabulary), words)))


def check_weights_close(name, ref_w, cand_w, lr, steps):
    """Final weights of runs whose sums were formed in another order: within
    1e-4, but the attention key bias (the middle third of c_attn.bias) has
    an exactly zero true gradient (softmax ignores a shift shared by all
    keys): its computed gradient is rounding noise whose sign follows the
    summation order, and AdamW's normalized step moves it by up to lr per
    step whatever its size. It is held to lr x steps."""
    diffs, key_bias = {}, 0.0
    for k in ref_w:
        d = np.abs(ref_w[k] - cand_w[k])
        if k.endswith('attn.c_attn.bias'):
            third = d.shape[0] // 3  # q, k, v
            key_bias = max(key_bias, float(np.max(d[third:2 * third])))
            d = np.concatenate([d[:third], d[2 * third:]])
        diffs[k] = float(np.max(d))
    worst = max(diffs, key=diffs.get)
    check(diffs[worst] <= 1e-4,
          f'{name}: final weights within 1e-4 (worst {diffs[worst]:.2e} in {worst})')
    check(key_bias <= lr * steps,
          f'{name}: attention key biases within lr x steps (worst {key_bias:.2e})')


def load_run(out):
    """((loss, grad_norm) per step, final weights) of a run in `out`."""
    from safetensors.numpy import load_file
    with open(os.path.join(out, 'log.jsonl')) as f:
        records = [json.loads(line) for line in f]
    return ([(r['loss'], r['grad_norm']) for r in records],
            load_file(os.path.join(out, 'weights.safetensors')))


def train(args, launch, exe, data, out, steps, extra=(), load=load_run):
    """Trains `exe` on byte `data` for `steps` with `launch` (one_rank or an
    mpirun of N); (load(out) or None on failure, the process result)."""
    os.makedirs(out, exist_ok=True)
    command = [args.trainc_run, exe, '--data', data, '--data-format', 'bytes',
               '--steps', str(steps), '--no-progress',
               '--log-jsonl', os.path.join(out, 'log.jsonl'),
               '--save-safetensors', os.path.join(out, 'weights.safetensors'),
               '--output-dir', out] + list(extra)
    result = launch(command)
    if result.returncode != 0:
        print(result.stdout[-2000:], result.stderr[-3000:])
        return None, result
    return load(out), result


# Loss and grad_norm curves of runs whose sums were formed in another order
# (MPI's reduction order, ranks x grad-accum against grad-accum alone): the
# orders differ in the last bits and 20 AdamW steps carry that forward, in
# jumps. Measured with tinygpt: 2 ranks x grad-accum 2 (deterministic)
# against grad-accum 4, 1e-7 for 19 steps, then 7.2e-6; 4 ranks in MPI
# order 3.5e-5; ZeRO-3 on 2 ranks with --clip-grad-norm 4.5e-5; and each
# changes with any kernel's rounding (7.5e-6 for the 4 ranks before the CPU
# attention's query tiles). A sum not divided by N multiplies grad_norm by
# N; the final weights are held separately (check_weights_close).
CURVE_RTOL = 1e-4


def compare_loose(name, reference, candidate, lr, steps):
    """Runs whose sums were formed in another order: loss and grad_norm
    within CURVE_RTOL relative, weights as check_weights_close."""
    if reference is None or candidate is None:
        check(False, f'{name}: both runs finish')
        return
    (ref_curve, ref_w), (cand_curve, cand_w) = reference, candidate
    ref, cand = np.array(ref_curve), np.array(cand_curve)
    worst = float(np.max(np.abs(ref - cand) / np.abs(ref))) if ref.shape == cand.shape else float('inf')
    check(ref.shape == cand.shape and worst <= CURVE_RTOL,
          f'{name}: curves within {CURVE_RTOL:g} relative (worst {worst:.2e})')
    check_weights_close(name, ref_w, cand_w, lr, steps)


def tinygpt_workspace(args, work, lr):
    """(compile, data) in directory `work`: compile(name, *flags) compiles
    tinygpt (tied_erf, opset 17) with `trainc --train --lr lr
    --print-memory-plan` and `flags` into (the executable's path, the
    printed report), exiting on a compile error; data is a byte-data file."""
    data = os.path.join(work, 'data.txt')
    write_byte_data(data)
    model = os.path.join(args.data_dir, 'tied_erf', 'model_train_opset17.onnx')

    def compile(name, *flags):
        path = os.path.join(work, name + '.tcx')
        r = subprocess.run([args.trainc, model, '--train', '--lr', str(lr),
                            '-o', path, '--print-memory-plan'] + list(flags),
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr)
            raise SystemExit(1)
        return path, r.stdout
    return compile, data


def check_rank_faults(tag, command):
    """Runs `command` (trainc-run of a 2-rank executable for many steps with
    --collective-timeout 4) on 2 ranks, stopping (SIGSTOP), then killing
    (SIGKILL) rank 1 after 1.5 s: each job must end within 60 s, never
    hang; the stop is named by rank 0's timeout (rank 1, and the step)."""
    for sig, expect in (('STOP', 'did not arrive'), ('KILL', '')):
        script = ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then '
                  f'(sleep 1.5; kill -{sig} $$) & fi; exec "$@"')
        start = time.monotonic()
        r = mpirun(2, ['sh', '-c', script, 'sh'] + command, timeout=120)
        took = time.monotonic() - start
        message = [l for l in r.stderr.splitlines() if 'error' in l.lower()]
        ok = r.returncode != 0 and took < 60 and (
            not expect or any(expect in l and 'rank(s) 1' in l and 'step ' in l
                              for l in message))
        check(ok, f'{tag}: rank 1 SIGSTOP/SIGKILL ({sig}): the job ends in {took:.1f} s '
              + (message[0][:200] if message else r.stderr.strip()[-200:]))
