#!/usr/bin/env python3
"""Benchmark: one GPT training step (forward, backward, AdamW) on this CPU,
trainc against PyTorch eager, PyTorch under torch.compile (inductor), JAX
(a jitted step with optax.adamw) and onnxruntime-training, in one run so all
see the same machine state: --rounds interleaved rounds (each framework once
per round, in turn), reported as the median of each framework's round
medians, every round's median printed. A 2048^3 f32 matmul through numpy's
BLAS, with the same thread settings, measured before and after the rounds,
is the machine's GEMM peak; each framework's step is also given as GFLOP/s
of its matmuls (step_flops) and as a share of that peak.

    python3 tools/bench_train.py [--layers 4 --d-model 256 --seq 128 ...]

Every framework trains the same model from the same initial weights on the
same batch: tools/make_gpt.py writes the ONNX model (tied GPT-2, pre-LN, erf
GELU, causal attention); trainc compiles it with --train --decay-all, and
onnxruntime-training builds its artifacts from the same file; PyTorch runs
the same architecture written in torch.nn with the ONNX initializers loaded
into it (torch.compile compiles that module; AdamW stays eager), and JAX the
same in jax.numpy (_jax_gpt_loss), its whole step under jax.jit. The batch is random tokens from --seed with targets = tokens
shifted by one, fed again at every step. AdamW: lr --lr, betas 0.9/0.999,
eps 1e-8, weight decay --weight-decay on every parameter.

Timing. A step is forward + backward + optimizer update (+ zeroing the
gradients); nothing is excluded, the first step included. "median" is the
upper median of all --steps step times (sorted[n // 2], trainc-run's
definition), "med 2..N" leaves out step 1 (allocation and warm-up), "min" is
the fastest step. trainc's median is the one trainc-run prints; its "med
2..N" and "min" come from the step_ms that trainc-run prints on each step
line or, from a trainc-run that does not, from the arrival times of those
lines (run under `stdbuf -oL`; they add only the pipe's wake-up latency, and
step 1 is then missing). Each framework runs in its own process
with --threads threads: TRAINC_NUM_THREADS, OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS and MKL_NUM_THREADS are set for every child, PyTorch
also calls torch.set_num_threads and onnxruntime gets intra_op_num_threads.
OMP_WAIT_POLICY is PASSIVE unless already set: Debian's torch runs its
OpenMP (libgomp) pool beside the pthread OpenBLAS's own threads, and
libgomp's default spin-waiting steals the cores OpenBLAS computes on (on 2
cores PyTorch's steps took 2.5x as long with it, more on a busy machine).
trainc and onnxruntime use no OpenMP. On a shared machine use --rounds.

Interpreters. PyTorch, JAX and onnxruntime-training run in child
interpreters, since they rarely share one with this script's numpy and onnx:
  * PyTorch 2.x (what the comparison is about; the runtime README's table
    used 2.15) from PyPI in a venv of its own, given with --torch-python:
        python3 -m venv ~/torch-venv
        ~/torch-venv/bin/pip install torch numpy \
            --extra-index-url https://download.pytorch.org/whl/cpu
    torch.compile needs a C++ compiler (g++) at run time.
  * JAX and optax: this interpreter when it has them (the test
    requirements install both into build/venv), else --jax-python.
  * Debian's python3-torch (1.13, `apt-get install -y python3-torch`) lives
    in /usr/lib/python3/dist-packages, which a pyenv or venv python does not
    see; and putting it on such a python's path mixes a pip numpy 2.x with a
    torch built against numpy 1.x ("Numpy is not available" on any
    torch.from_numpy). So --torch-python defaults to the first of this
    interpreter and /usr/bin/python3 where `torch.from_numpy` works: with
    Debian's torch that is /usr/bin/python3 with Debian's numpy 1.24.
  * onnxruntime-training (pip, last release 1.19.2) installs into the same
    `onnxruntime` package as plain onnxruntime and would replace it, and
    `import onnxruntime.training` imports torch. Give it its own venv that
    sees Debian's torch:
        /usr/bin/python3 -m venv --system-site-packages ~/ort-training-venv
        ~/ort-training-venv/bin/pip install onnxruntime-training onnx "numpy<2"
    and pass --ort-training-python ~/ort-training-venv/bin/python. Two
    adjustments, made in the child, let 1.19.2 train make_gpt.py's model:
    LayerNormalization nodes get their optional Mean and InvStdDev outputs
    (its gradient builder reads them), and the generated optimizer model
    gets the input model's IR version (a newer onnx writes one 1.19 refuses).
A framework whose interpreter cannot be found is reported as skipped with
the reason, not as an error. Children only need numpy and their framework
(plus onnx for onnxruntime-training); this script needs numpy and onnx.

Exits non-zero when the trainc binaries are missing or a framework that
was found fails.
"""
import argparse
import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS_DIR)
BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
RESULT_PREFIX = 'BENCH_RESULT '
FRAMEWORKS = ('trainc', 'trainc-baseline', 'pytorch', 'pytorch-compile', 'jax', 'ort-training')
# Run only when --baseline-bin-dir names another build of trainc (before a
# change), so a refactoring shows its losses and step time against the
# build it replaces, in one run.
OPTIONAL = ('trainc-baseline',)


class Skipped(Exception):
    """A framework that is not available here; the message says why."""


class Failed(Exception):
    """A framework that is available but did not complete its steps."""


# ---------------------------------------------------------------------------
# Step-time summaries


def upper_median(values):
    """sorted(values)[n // 2], the median trainc-run prints; None if empty."""
    return sorted(values)[len(values) // 2] if values else None


def summarize(times_ms):
    """median of all steps, median of steps 2..N and min, in ms."""
    return {'median_ms': upper_median(times_ms), 'median_rest_ms': upper_median(times_ms[1:]),
            'min_ms': min(times_ms)}


def loaded_blas_libraries():
    """Shared libraries of this process that look like BLAS, resolved."""
    libs = set()
    with open('/proc/self/maps') as maps:
        for line in maps:
            path = line.split()[-1]
            if re.search(r'blas|mkl|dnnl|lapack', os.path.basename(path), re.I):
                libs.add(os.path.realpath(path))
    return sorted(libs)


# ---------------------------------------------------------------------------
# Child interpreters: PyTorch and onnxruntime-training.
#
# The parent runs `PYTHON -c <_CHILD_MAIN>` with a JSON config on stdin; the
# child imports this file (numpy only at module level), runs the framework
# and prints RESULT_PREFIX + JSON as its last line.

_CHILD_MAIN = ('import sys; sys.path.insert(0, {tools!r}); '
               'import bench_train; bench_train.child_main()')


def child_main():
    """Entry point of a child interpreter: config on stdin, result on stdout."""
    import resource
    cfg = json.load(sys.stdin)
    runner = {'pytorch': _pytorch_steps, 'pytorch-compile': _pytorch_steps,
              'jax': _jax_steps, 'ort-training': _ort_training_steps}[cfg['framework']]
    result = runner(cfg)
    result['peak_rss'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def _torch_gpt(torch, cfg):
    """The make_gpt.py architecture in torch.nn, parameter names included."""
    nn, F = torch.nn, torch.nn.functional
    d, h, t, v = cfg['d_model'], cfg['heads'], cfg['seq'], cfg['vocab']
    hd = d // h
    sdpa = hasattr(F, 'scaled_dot_product_attention')

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(d, 3 * d)
            self.c_proj = nn.Linear(d, d)
            self.register_buffer('future', torch.ones(t, t, dtype=torch.bool).triu(1),
                                 persistent=False)

        def forward(self, x):
            b, n, _ = x.shape
            q, k, val = self.c_attn(x).split(d, dim=2)
            q, k, val = (z.view(b, n, h, hd).transpose(1, 2) for z in (q, k, val))
            if sdpa:
                y = F.scaled_dot_product_attention(q, k, val, is_causal=True)
            else:
                s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
                y = s.masked_fill(self.future[:n, :n], float('-inf')).softmax(-1) @ val
            return self.c_proj(y.transpose(1, 2).reshape(b, n, d))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(d, cfg['mlp_ratio'] * d)
            self.c_proj = nn.Linear(cfg['mlp_ratio'] * d, d)

        def forward(self, x):
            # make_gpt's GELU: erf (torch's default) or GPT-2's tanh.
            approximate = 'tanh' if cfg['gelu'] == 'tanh' else 'none'
            return self.c_proj(F.gelu(self.c_fc(x), approximate=approximate))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(d), Attention()
            self.ln_2, self.mlp = nn.LayerNorm(d), Mlp()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(v, d), nn.Embedding(t, d)
            self.h = nn.ModuleList(Block() for _ in range(cfg['layers']))
            self.ln_f = nn.LayerNorm(d)
            self.register_buffer('pos', torch.arange(t), persistent=False)

        def forward(self, tokens, targets):
            x = self.wte(tokens) + self.wpe(self.pos[:tokens.shape[1]])
            for block in self.h:
                x = block(x)
            logits = self.ln_f(x) @ self.wte.weight.t()  # tied head
            return F.cross_entropy(logits.reshape(-1, v), targets.reshape(-1))

    return Gpt(), ('F.scaled_dot_product_attention' if sdpa
                   else 'matmul + masked_fill + softmax')


def torch_step_times(model, opt, tokens, targets, steps):
    """Trains `steps` steps (forward, backward, update, zeroing); returns the
    step times in ms and the losses."""
    times, losses = [], []
    for _ in range(steps):
        start = time.perf_counter()
        loss = model(tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        times.append((time.perf_counter() - start) * 1e3)
    return times, losses


def _pytorch_steps(cfg):
    import torch
    torch.set_num_threads(cfg['threads'])
    model, attention = _torch_gpt(torch, cfg)
    init = np.load(cfg['init'])
    model.load_state_dict({k: torch.from_numpy(init[k]) for k in init.files}, strict=True)
    tokens = torch.from_numpy(np.load(cfg['tokens']))
    targets = torch.from_numpy(np.load(cfg['targets']))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg['lr'], betas=BETAS, eps=ADAM_EPS,
                            weight_decay=cfg['weight_decay'], foreach=False)
    compiled = cfg['framework'] == 'pytorch-compile'
    if compiled:
        # Inductor compiles forward and backward on the first step (its time
        # is that step's; the median leaves it out); AdamW stays eager.
        model = torch.compile(model)
    times, losses = torch_step_times(model, opt, tokens, targets, cfg['steps'])
    if compiled:
        attention += ' under torch.compile (inductor)'
    blas = re.search(r'BLAS_INFO=([^,\s]+)', torch.__config__.show())
    return {'times_ms': times, 'losses': losses,
            'version': f'torch {torch.__version__}, numpy {np.__version__}, {sys.executable}',
            'threads': torch.get_num_threads(), 'attention': attention,
            'blas': f'BLAS_INFO={blas.group(1) if blas else "?"}; loaded: '
                    + (', '.join(loaded_blas_libraries()) or 'none')}


def _jax_gpt_loss(jnp, jax, cfg):
    """The make_gpt.py architecture in jax.numpy: loss(params, tokens,
    targets), params named as the ONNX initializers (torch.nn's names;
    Linear weights [out, in])."""
    d, h, v = cfg['d_model'], cfg['heads'], cfg['vocab']
    hd = d // h

    def linear(p, name, x):
        return x @ p[name + '.weight'].T + p[name + '.bias']

    def layer_norm(p, name, x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5) * p[name + '.weight'] + p[name + '.bias']

    def attention(p, name, x):
        b, n, _ = x.shape
        q, k, val = jnp.split(linear(p, name + '.c_attn', x), 3, axis=2)
        q, k, val = (z.reshape(b, n, h, hd).transpose(0, 2, 1, 3) for z in (q, k, val))
        s = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(hd)
        s = jnp.where(jnp.tril(jnp.ones((n, n), bool)), s, -jnp.inf)
        y = jax.nn.softmax(s, axis=-1) @ val
        return linear(p, name + '.c_proj', y.transpose(0, 2, 1, 3).reshape(b, n, d))

    def loss(p, tokens, targets):
        x = p['wte.weight'][tokens] + p['wpe.weight'][:tokens.shape[1]]
        for i in range(cfg['layers']):
            x = x + attention(p, f'h.{i}.attn', layer_norm(p, f'h.{i}.ln_1', x))
            y = linear(p, f'h.{i}.mlp.c_fc', layer_norm(p, f'h.{i}.ln_2', x))
            x = x + linear(p, f'h.{i}.mlp.c_proj', jax.nn.gelu(
                y, approximate=cfg['gelu'] == 'tanh'))
        logits = layer_norm(p, 'ln_f', x) @ p['wte.weight'].T  # tied head
        logp = jax.nn.log_softmax(logits.reshape(-1, v), axis=-1)
        return -jnp.take_along_axis(logp, targets.reshape(-1, 1), axis=1).mean()

    return loss


def _jax_steps(cfg):
    # Threads: XLA's CPU client sizes its pool from the CPUs this process
    # may use, so the parent pins the child with taskset (see bench_child).
    import jax
    import jax.numpy as jnp
    import optax
    jax.config.update('jax_platforms', 'cpu')
    init = np.load(cfg['init'])
    params = {k: jnp.asarray(init[k]) for k in init.files}
    tokens, targets = jnp.asarray(np.load(cfg['tokens'])), jnp.asarray(np.load(cfg['targets']))
    opt = optax.adamw(cfg['lr'], b1=BETAS[0], b2=BETAS[1], eps=ADAM_EPS,
                      weight_decay=cfg['weight_decay'])
    state = opt.init(params)
    loss_fn = _jax_gpt_loss(jnp, jax, cfg)

    @jax.jit
    def step(params, state):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    times, losses = [], []
    for _ in range(cfg['steps']):
        start = time.perf_counter()
        params, state, loss = step(params, state)
        losses.append(float(loss))  # waits for the step
        times.append((time.perf_counter() - start) * 1e3)
    return {'times_ms': times, 'losses': losses,
            'version': f'jax {jax.__version__}, optax {optax.__version__}, {sys.executable}',
            'threads': len(os.sched_getaffinity(0)),
            'attention': 'jnp matmul + where + softmax, the whole step under jax.jit',
            'blas': 'XLA CPU (Eigen / oneDNN kernels inside XLA)'}


def _ort_training_steps(cfg):
    import onnx
    import onnxruntime as ort
    from onnxruntime.training import artifacts, onnxblock
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    ort.set_default_logger_severity(3)  # errors only
    art = os.path.join(cfg['work'], 'ort_training')
    os.makedirs(art, exist_ok=True)
    model = onnx.load(cfg['model'])
    # ORT's LayerNormalization gradient reads the optional Mean and
    # InvStdDev outputs; without them generate_artifacts fails with
    # "GradientBuilderBase::O(size_t, bool) ... i < node_->OutputDefs().size()".
    for node in model.graph.node:
        if node.op_type == 'LayerNormalization':
            while len(node.output) < 3:
                node.output.append(f'{node.name}_{("Mean", "InvStdDev")[len(node.output) - 1]}')
    start = time.perf_counter()
    artifacts.generate_artifacts(
        model, requires_grad=cfg['params'], loss=None,
        optimizer=onnxblock.optim.AdamW(betas=BETAS, eps=ADAM_EPS,
                                        weight_decay=cfg['weight_decay']),
        artifact_directory=art)
    # onnxblock writes the optimizer model with the installed onnx's newest IR
    # version, which onnxruntime-training 1.19 refuses ("Unsupported model IR
    # version: 14, max supported IR version: 10"); the input model's will do.
    optimizer_path = os.path.join(art, 'optimizer_model.onnx')
    optimizer_model = onnx.load(optimizer_path)
    if optimizer_model.ir_version > model.ir_version:
        optimizer_model.ir_version = model.ir_version
        onnx.save(optimizer_model, optimizer_path)
    build_s = time.perf_counter() - start
    options = ort.SessionOptions()
    options.intra_op_num_threads = cfg['threads']
    options.inter_op_num_threads = 1
    state = CheckpointState.load_checkpoint(os.path.join(art, 'checkpoint'))
    module = Module(os.path.join(art, 'training_model.onnx'), state,
                    os.path.join(art, 'eval_model.onnx'), device='cpu', session_options=options)
    optimizer = Optimizer(optimizer_path, module)
    optimizer.set_learning_rate(cfg['lr'])
    module.train()
    tokens, targets = np.load(cfg['tokens']), np.load(cfg['targets'])
    times, losses = [], []
    for _ in range(cfg['steps']):
        start = time.perf_counter()
        loss = module(tokens, targets)
        optimizer.step()
        module.lazy_reset_grad()
        times.append((time.perf_counter() - start) * 1e3)
        losses.append(float(loss))
    return {'times_ms': times, 'losses': losses, 'build_s': build_s,
            'version': f'onnxruntime-training {ort.__version__}, {sys.executable}',
            'threads': cfg['threads'], 'blas': 'MLAS (onnxruntime\'s own GEMM)'}


def probe_interpreter(python, code):
    """None if `python -c code` succeeds, else the last line of its error."""
    if not python or not shutil.which(python):
        return f'{python}: no such interpreter'
    try:
        proc = subprocess.run([python, '-c', code], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return f'{python}: probe timed out'
    if proc.returncode == 0:
        return None
    lines = [l for l in proc.stderr.strip().splitlines() if l.strip()]
    return f'{python}: {lines[-1] if lines else "exit " + str(proc.returncode)}'


def run_child(python, cfg, env):
    """Runs one framework in `python`; returns its result dict."""
    command = python if isinstance(python, list) else [python]
    proc = subprocess.run(command + ['-c', _CHILD_MAIN.format(tools=TOOLS_DIR)],
                          input=json.dumps(cfg), capture_output=True, text=True, env=env)
    results = [l for l in proc.stdout.splitlines() if l.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not results:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        last = lines[-1] if lines else 'no output'
        raise Failed(f'{python} exited {proc.returncode}: {last}\n' + '\n'.join(lines[-15:]))
    return json.loads(results[-1][len(RESULT_PREFIX):])


def find_torch_python(args):
    """The interpreter to run PyTorch in; raises Skipped if there is none."""
    code = 'import numpy, torch; torch.from_numpy(numpy.zeros(1))'
    candidates = [args.torch_python] if args.torch_python else [sys.executable, '/usr/bin/python3']
    reasons = []
    for python in dict.fromkeys(candidates):
        reason = probe_interpreter(python, code)
        if reason is None:
            return python
        reasons.append(reason)
    raise Skipped('no interpreter with a working torch + numpy (' + '; '.join(reasons)
                  + '). Install it with: apt-get install -y python3-torch '
                    '(then run as is), or give --torch-python')


def find_ort_training_python(args):
    """The interpreter to run onnxruntime-training in; raises Skipped if none."""
    python = args.ort_training_python or sys.executable
    reason = probe_interpreter(
        python, 'import numpy, onnx; from onnxruntime.training import artifacts, api')
    if reason is not None:
        raise Skipped(f'not available ({reason}). See --help for a venv recipe, '
                      'then give --ort-training-python')
    return python


def find_jax_python(args):
    """The interpreter to run JAX in; raises Skipped if there is none."""
    python = args.jax_python or sys.executable
    reason = probe_interpreter(python, 'import numpy, jax, optax')
    if reason is not None:
        raise Skipped(f'not available ({reason}); pip install "jax[cpu]" optax, '
                      'or give --jax-python')
    return python


def bench_child(framework, python, cfg, env):
    """Runs PyTorch, JAX or onnxruntime-training steps in `python`."""
    if framework == 'jax':
        # XLA takes its thread count from the CPUs it may run on.
        cpus = sorted(os.sched_getaffinity(0))[:cfg['threads']]
        python = ['taskset', '-c', ','.join(map(str, cpus)), python]
    result = run_child(python, dict(cfg, framework=framework), env)
    result.update(summarize(result['times_ms']))
    return result


# ---------------------------------------------------------------------------
# trainc


def bench_trainc(bin_dir, cfg, env, flags=()):
    """Compiles the model with trainc (with `flags` added) and runs --steps steps
    with trainc-run."""
    trainc = os.path.join(bin_dir, 'trainc')
    run = os.path.join(bin_dir, 'trainc-run')
    exe = os.path.join(cfg['work'], 'step.tcx')
    command = [trainc, cfg['model'], '--train', '--optimizer', 'adamw', '--lr', str(cfg['lr']),
               '--beta1', str(BETAS[0]), '--beta2', str(BETAS[1]), '--eps', str(ADAM_EPS),
               '--weight-decay', str(cfg['weight_decay']), '--decay-all',
               '--precision', cfg.get('precision', 'f32'), '-o', exe, *flags]
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    build_s = time.perf_counter() - start
    if proc.returncode != 0:
        raise Failed(f'{" ".join(command)} exited {proc.returncode}:\n{proc.stderr.strip()}')

    command = [run, exe, '--input', f'tokens={cfg["tokens"]}',
               '--input', f'targets={cfg["targets"]}', '--steps', str(cfg['steps']),
               '--output-dir', cfg['work']]
    # Line-buffered output, so each "step N:" line arrives when the step ends.
    if shutil.which('stdbuf'):
        command = ['stdbuf', '-oL'] + command
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    lines, arrivals, losses, step_ms = [], [], [], []
    for line in proc.stdout:
        now = time.perf_counter()
        lines.append(line.rstrip('\n'))
        step = re.match(r'step (\d+): loss (\S+)', line)
        if step:
            arrivals.append(now)
            losses.append(float(step.group(2)))
            ms = re.search(r'\bstep_ms ([0-9.]+)', line)
            if ms:
                step_ms.append(float(ms.group(1)))
    # wait4 rather than wait: the child's own peak RSS, not the largest of
    # every child this script has waited for.
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise Failed(f'{" ".join(command)} exited {proc.returncode}:\n' + '\n'.join(lines[-15:]))
    median = re.search(r'run: median ([0-9.]+) ms', '\n'.join(lines))
    if not median or len(losses) != cfg['steps']:
        raise Failed('unexpected trainc-run output:\n' + '\n'.join(lines[-10:]))
    planned = re.search(r'memory peak planned (\d+)', '\n'.join(lines))
    result = {'losses': losses, 'build_s': build_s, 'threads': cfg['threads'],
              'peak_rss': usage.ru_maxrss * 1024,
              'planned': int(planned.group(1)) if planned else None,
              'version': os.path.realpath(run), 'blas': trainc_blas(run)}
    if len(step_ms) == len(losses):
        # Newer trainc-run prints each step's time (step_ms).
        result.update(summarize(step_ms), times_ms=step_ms, step_times='step_ms')
    else:
        # Steps 2..N from line arrivals; step 1's start is not visible here.
        gaps = [(b - a) * 1e3 for a, b in zip(arrivals, arrivals[1:])]
        result.update(times_ms=gaps, median_rest_ms=upper_median(gaps),
                      min_ms=min(gaps) if gaps else None, step_times='output line gaps')
    result['median_ms'] = float(median.group(1))  # trainc-run's own
    return result


def trainc_blas(run):
    """The BLAS library trainc-run loads, symlinks resolved: it loads OpenBLAS
    with dlopen as it starts (runtime/src/cpu/Gemm.h), so not ldd but the
    loader's own trace of `trainc-run --help` (LD_DEBUG=files) names it."""
    try:
        trace = subprocess.run([run, '--help'], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, LD_DEBUG='files')).stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return f'unknown ({e})'
    libs = sorted({os.path.realpath(m) for m in
                   re.findall(r'calling init: (\S*(?:blas|mkl)\S*)', trace, re.I)})
    return '; '.join(libs) or 'unknown (the loader loaded no BLAS library)'


# ---------------------------------------------------------------------------
# Report


def cpu_model():
    try:
        with open('/proc/cpuinfo') as f:
            names = re.findall(r'^model name\s*:\s*(.*)$', f.read(), re.M)
    except OSError:
        names = []
    return names[0] if names else 'unknown'


def fmt(ms):
    return f'{ms:9.2f}' if ms is not None else '      n/a'


_GEMM_PEAK_CODE = """
import json, time, numpy as np
n = 2048
a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
a @ b
seconds = []
for _ in range(5):
    start = time.perf_counter()
    a @ b
    seconds.append(time.perf_counter() - start)
best = min(seconds)
print(json.dumps({'gflops': 2 * n ** 3 / best / 1e9}))
"""


def gemm_peak(env):
    """GFLOP/s of a 2048^3 f32 matmul through numpy's BLAS with the
    benchmark's thread settings (best of 5 after one warm-up): the
    machine's GEMM peak the steps are measured against."""
    proc = subprocess.run([sys.executable, '-c', _GEMM_PEAK_CODE], capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        raise Failed(f'GEMM peak: {proc.stderr.strip()[-500:]}')
    return json.loads(proc.stdout.strip().splitlines()[-1])['gflops']


def step_flops(cfg, batch):
    """Matmul FLOPs of one training step: 3x the forward's (the backward
    multiplies twice per forward product), the forward being every Linear,
    the tied head and attention's two products over all S x S scores
    (causal masking not subtracted, as MFU figures count it)."""
    d, s, v, f = cfg['d_model'], cfg['seq'], cfg['vocab'], cfg['mlp_ratio'] * cfg['d_model']
    tokens = batch * s
    per_layer = 2 * tokens * (d * 3 * d + d * d + 2 * d * f) + 2 * 2 * batch * s * s * d
    return 3 * (cfg['layers'] * per_layer + 2 * tokens * d * v)


def print_report(args, results, tokens_per_step, peaks=(), flops=None):
    print()
    peak = max(peaks) if peaks else None
    if peaks:
        print(f'GEMM peak (numpy 2048^3 f32 matmul, {args.threads} threads, before and after '
              f'the rounds): {" and ".join(f"{p:.1f}" for p in peaks)} GFLOP/s; '
              f'a step is {flops / 1e9:.2f} GFLOP of matmuls')
    print(f'{"framework":<16}{"median ms":>10}{"med 2..N":>10}{"min ms":>10}'
          f'{"tokens/s":>11}{"GFLOP/s":>9}{"of peak":>8}{"loss@1":>10}{f"loss@{args.steps}":>10}')
    for name in FRAMEWORKS:
        r = results.get(name)
        if r is None:
            continue
        if isinstance(r, Exception):
            kind = 'skipped' if isinstance(r, Skipped) else 'FAILED'
            print(f'{name:<16}{kind}: {str(r).splitlines()[0]}')
            continue
        rate = flops / r['median_ms'] / 1e6 if flops else float('nan')
        share = f'{100 * rate / peak:7.0f}%' if peak else f'{"":>8}'
        print(f'{name:<16}{fmt(r["median_ms"])} {fmt(r["median_rest_ms"])} {fmt(r["min_ms"])}'
              f'{tokens_per_step * 1e3 / r["median_ms"]:11.0f}{rate:9.1f}{share}'
              f'{r["losses"][0]:10.4f}{r["losses"][-1]:10.4f}')
    base = results.get('trainc')
    if isinstance(base, dict):
        for name in FRAMEWORKS[1:]:
            r = results.get(name)
            if isinstance(r, dict):
                print(f'{name} / trainc = {r["median_ms"] / base["median_ms"]:.2f}x '
                      f'(median step time; above 1: trainc is faster)')
        others = [results[name]['median_ms'] for name in FRAMEWORKS[1:]
                  if name != 'trainc-baseline' and isinstance(results.get(name), dict)]
        if others and peak and flops:
            # No step is faster than its matmuls at the measured peak.
            floor_ms = flops / peak / 1e6
            print(f'ceiling: with its matmuls at the GEMM peak ({floor_ms:.1f} ms) and nothing '
                  f'else, a step would be {min(others) / floor_ms:.2f}x the fastest other '
                  f'framework; trainc is at {min(others) / base["median_ms"]:.2f}x')
        other = results.get('trainc-baseline')
        if isinstance(other, dict):
            diff = max(abs(a - b) for a, b in zip(base['losses'], other['losses']))
            same = base['losses'] == other['losses']
            print(f'trainc-baseline losses: {"identical to" if same else "DIFFER from"} '
                  f'trainc\'s at every step (max |difference| {diff:.3g})')
    print(f'(ln {args.vocab} = {math.log(args.vocab):.4f}; same init and batch everywhere, '
          f'so loss@1 should agree to ~1e-5)')
    if args.rounds > 1:
        print(f'"median ms" is the median of {args.rounds} interleaved rounds\' medians (each '
              f'round\'s own median in ms below); the other columns are from the round '
              f'closest to it:')
        for name in FRAMEWORKS:
            r = results.get(name)
            if isinstance(r, dict):
                print(f'  {name:<16}' + ' '.join(f'{m:.1f}' for m in r['round_medians']))
    print()
    for name in FRAMEWORKS:
        r = results.get(name)
        if isinstance(r, dict):
            extra = f'; attention: {r["attention"]}' if 'attention' in r else ''
            extra += f'; setup {r["build_s"]:.1f} s' if 'build_s' in r else ''
            extra += f'; step times from {r["step_times"]}' if 'step_times' in r else ''
            if r.get('peak_rss'):
                extra += f'; peak RSS {r["peak_rss"] / 2**20:.0f} MiB'
            if r.get('planned'):
                extra += f' (the static plan: {r["planned"] / 2**20:.0f} MiB)'
            print(f'{name}: {r["version"]}; {r["threads"]} threads{extra}')
            print(f'  BLAS: {r["blas"]}')
    if args.per_step:
        print('\nstep times in ms and losses:')
        for name in FRAMEWORKS:
            r = results.get(name)
            if isinstance(r, dict):
                print(f'  {name} ms:   ' + ' '.join(f'{t:.0f}' for t in r['times_ms']))
                print(f'  {name} loss: ' + ' '.join(f'{x:.4f}' for x in r['losses']))
    for name in FRAMEWORKS:
        r = results.get(name)
        if isinstance(r, Exception) and len(str(r).splitlines()) > 1:
            print(f'\n{name} failed:\n{r}')


# ---------------------------------------------------------------------------


def parse_args():
    parser = argparse.ArgumentParser(
        description='Time GPT training steps (forward, backward, AdamW) in trainc, PyTorch '
                    'and onnxruntime-training on the same model, weights and batch.',
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='PyTorch 2.x: python3 -m venv ~/torch-venv && ~/torch-venv/bin/pip install torch '
               'numpy --extra-index-url https://download.pytorch.org/whl/cpu,\n'
               '  then --torch-python ~/torch-venv/bin/python (or Debian\'s 1.13: '
               'apt-get install -y python3-torch, found in /usr/bin/python3).\n'
               'onnxruntime-training: in its own venv, so that it does not replace onnxruntime:\n'
               '  /usr/bin/python3 -m venv --system-site-packages ~/ort-training-venv\n'
               '  ~/ort-training-venv/bin/pip install onnxruntime-training onnx "numpy<2"\n'
               '  then --ort-training-python ~/ort-training-venv/bin/python\n'
               'A framework that is not found is reported as skipped.\n'
               'The docstring at the top of this file explains the timing and the interpreters.')
    model = parser.add_argument_group('model (tools/make_gpt.py)')
    model.add_argument('--vocab', type=int, default=256, help='vocabulary size (default: %(default)s)')
    model.add_argument('--seq', type=int, default=128, help='sequence length (default: %(default)s)')
    model.add_argument('--batch', type=int, default=8, help='batch size (default: %(default)s)')
    model.add_argument('--d-model', type=int, default=256,
                       help='residual stream width (default: %(default)s)')
    model.add_argument('--heads', type=int, default=4, help='attention heads (default: %(default)s)')
    model.add_argument('--layers', type=int, default=4,
                       help='transformer blocks (default: %(default)s)')
    model.add_argument('--mlp-ratio', type=int, default=4,
                       help='MLP width as a multiple of d-model (default: %(default)s)')
    model.add_argument('--gelu', choices=('erf', 'tanh'), default='erf',
                       help="the MLP's GELU: erf (exact) or tanh (GPT-2's "
                            'approximation), in every framework (default: %(default)s)')
    run = parser.add_argument_group('training run')
    run.add_argument('--steps', type=int, default=20,
                     help='training steps per framework, all timed (default: %(default)s)')
    run.add_argument('--lr', type=float, default=1e-3,
                     help='AdamW learning rate, constant (default: %(default)s)')
    run.add_argument('--weight-decay', type=float, default=0.01,
                     help='AdamW decoupled weight decay, on every parameter (default: %(default)s)')
    run.add_argument('--seed', type=int, default=0,
                     help='seed of the initial weights and of the random batch (default: %(default)s)')
    run.add_argument('--threads', type=int, default=2,
                     help='threads for every framework (default: %(default)s)')
    run.add_argument('--precision', default='f32', choices=('f32', 'tf32', 'bf16', 'fp16'),
                     help='trainc --precision of trainc and trainc-baseline; other than f32 '
                          'only with those two, as the other frameworks run f32 '
                          '(default: %(default)s)')
    where = parser.add_argument_group('what to run')
    where.add_argument('--frameworks',
                       default=','.join(f for f in FRAMEWORKS if f not in OPTIONAL),
                       help='comma-separated subset of %(default)s to run (trainc-baseline '
                            'joins them with --baseline-bin-dir)')
    where.add_argument('--trainc-bin-dir', default=os.path.join(REPO, 'build', 'bin'),
                       help='directory holding trainc and trainc-run (default: %(default)s)')
    where.add_argument('--baseline-bin-dir', default=None,
                       help='another build of trainc (e.g. of the commit before a change) to '
                            'run as "trainc-baseline" in the same rounds; the report compares '
                            'its step time and losses with trainc\'s')
    where.add_argument('--baseline-flags', default=None,
                       help='trainc flags that only trainc-baseline compiles with (e.g. '
                            '"--fuse-elementwise=false": the same build without a pass); '
                            'its build is --baseline-bin-dir, or --trainc-bin-dir without it')
    where.add_argument('--torch-python', default=None,
                       help='python interpreter to run PyTorch in (default: the first of this '
                            'one and /usr/bin/python3 where torch and numpy work together)')
    where.add_argument('--jax-python', default=None,
                       help='python interpreter with jax and optax (default: this one)')
    where.add_argument('--ort-training-python', default=None,
                       help='python interpreter with onnxruntime-training and onnx (default: '
                            'this one, if it has them)')
    run.add_argument('--rounds', type=int, default=6,
                     help='run every framework this many times, in turn; the report gives '
                          'each one\'s median of its round medians and every round, so a '
                          'busy machine\'s noise is visible (default: %(default)s)')
    where.add_argument('--per-step', action='store_true',
                       help='also print every step\'s time and loss for each framework')
    where.add_argument('--work-dir', default=None,
                       help='keep the model, data, executable and artifacts here (default: a '
                            'temporary directory, removed at the end)')
    args = parser.parse_args()
    chosen = [f.strip() for f in args.frameworks.split(',') if f.strip()]
    unknown = sorted(set(chosen) - set(FRAMEWORKS))
    if unknown:
        parser.error(f'--frameworks: unknown {", ".join(unknown)}; choose from '
                     f'{", ".join(FRAMEWORKS)}')
    if args.baseline_flags is not None and not args.baseline_bin_dir:
        args.baseline_bin_dir = args.trainc_bin_dir
    if args.baseline_bin_dir and 'trainc-baseline' not in chosen:
        chosen.append('trainc-baseline')
    if 'trainc-baseline' in chosen and not args.baseline_bin_dir:
        parser.error('trainc-baseline needs --baseline-bin-dir or --baseline-flags')
    args.frameworks = chosen
    if args.precision != 'f32' and set(chosen) - {'trainc', 'trainc-baseline'}:
        parser.error(f'--precision {args.precision} compares trainc with trainc-baseline only '
                     '(--frameworks trainc --baseline-bin-dir DIR): the other frameworks '
                     'run f32')
    if min(args.steps, args.threads, args.rounds) < 1:
        parser.error('--steps, --threads and --rounds must be at least 1')
    return args


def prepare(args, work):
    """Writes model.onnx, init.npz, tokens.npy and targets.npy; returns cfg."""
    try:
        import onnx
        from onnx import numpy_helper
        sys.path.insert(0, TOOLS_DIR)
        import make_gpt
    except ImportError as e:
        sys.exit(f'bench_train.py needs onnx to write the model ({e}): pip install onnx')
    gpt = make_gpt.GptConfig(vocab=args.vocab, seq=args.seq, batch=args.batch,
                             d_model=args.d_model, heads=args.heads, layers=args.layers,
                             mlp_ratio=args.mlp_ratio, tied=True, seed=args.seed,
                             gelu=getattr(args, 'gelu', 'erf'))
    try:
        model = make_gpt.build_model(gpt)
    except ValueError as e:
        sys.exit(f'bench_train.py: {e}')
    paths = {k: os.path.join(work, f) for k, f in (('model', 'model.onnx'), ('init', 'init.npz'),
                                                   ('tokens', 'tokens.npy'),
                                                   ('targets', 'targets.npy'))}
    onnx.save(model, paths['model'])
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    np.savez(paths['init'], **init)
    data = np.random.default_rng(args.seed + 1).integers(
        0, args.vocab, size=(args.batch, args.seq + 1), dtype=np.int64)
    np.save(paths['tokens'], np.ascontiguousarray(data[:, :-1]))
    np.save(paths['targets'], np.ascontiguousarray(data[:, 1:]))
    print(f'model: {make_gpt.parameter_count(model):,} parameters, {args.layers} layers, '
          f'd_model {args.d_model}, {args.heads} heads, vocab {args.vocab}, '
          f'{gpt.gelu} GELU, batch {args.batch} x seq {args.seq}; {args.steps} AdamW steps')
    return dict(paths, work=work, params=list(init), vocab=args.vocab, seq=args.seq,
                d_model=args.d_model, heads=args.heads, layers=args.layers,
                mlp_ratio=args.mlp_ratio, gelu=gpt.gelu, steps=args.steps, lr=args.lr,
                weight_decay=args.weight_decay, threads=args.threads,
                precision=getattr(args, 'precision', 'f32'))


def main():
    args = parse_args()
    if 'trainc' in args.frameworks:
        missing = [b for b in ('trainc', 'trainc-run')
                   if not os.access(os.path.join(args.trainc_bin_dir, b), os.X_OK)]
        if missing:
            sys.exit(f'bench_train.py: {", ".join(missing)} not found in {args.trainc_bin_dir}; '
                     'build with `cmake --build build` or give --trainc-bin-dir')
    env = dict(os.environ, **{v: str(args.threads) for v in (
        'TRAINC_NUM_THREADS', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS')})
    # Idle OpenMP threads sleep instead of spinning (see the docstring).
    env.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
    print(f'CPU: {cpu_model()}, {os.cpu_count()} logical CPUs, '
          f'{len(os.sched_getaffinity(0))} usable; load average '
          f'{" ".join(f"{x:.2f}" for x in os.getloadavg())}; {args.threads} threads each')

    with tempfile.TemporaryDirectory() as tmp:
        work = args.work_dir or tmp
        os.makedirs(work, exist_ok=True)
        cfg = prepare(args, os.path.abspath(work))
        # Each framework's runner, or the reason it cannot run here.
        runners = {'trainc': lambda: bench_trainc(args.trainc_bin_dir, cfg, env),
                   'trainc-baseline': lambda: bench_trainc(
                       args.baseline_bin_dir, cfg, env, shlex.split(args.baseline_flags or ''))}
        for name, find in (('pytorch', find_torch_python),
                           ('pytorch-compile', find_torch_python),
                           ('jax', find_jax_python),
                           ('ort-training', find_ort_training_python)):
            if name in args.frameworks:
                try:
                    python = find(args)
                    runners[name] = lambda name=name, python=python: bench_child(
                        name, python, cfg, env)
                except Skipped as e:
                    runners[name] = e
        # Every round runs each framework once; a framework's report is the
        # median of its round medians, its other columns from that round.
        results, round_medians, rounds = {}, {}, {}
        peaks = [gemm_peak(env)]
        for round_index in range(args.rounds):
            for name in FRAMEWORKS:
                if name not in args.frameworks or isinstance(results.get(name), Exception):
                    continue
                print(f'{name}: round {round_index + 1}/{args.rounds}, {args.steps} steps ...',
                      flush=True)
                try:
                    if isinstance(runners[name], Exception):
                        raise runners[name]
                    result = runners[name]()
                except (Skipped, Failed) as e:
                    results[name] = e
                    print(f'{name}: {"skipped" if isinstance(e, Skipped) else "FAILED"}: '
                          f'{str(e).splitlines()[0]}', flush=True)
                    continue
                round_medians.setdefault(name, []).append(result['median_ms'])
                rounds.setdefault(name, []).append(result)
                results[name] = result
        peaks.append(gemm_peak(env))
        for name, medians in round_medians.items():
            if isinstance(results.get(name), dict):
                middle = statistics.median(medians)
                closest = min(rounds[name], key=lambda r: abs(r['median_ms'] - middle))
                results[name] = dict(closest, median_ms=middle, round_medians=medians)
    print_report(args, results, args.batch * args.seq, peaks, step_flops(cfg, args.batch))
    if any(isinstance(r, Failed) for r in results.values()):
        sys.exit(1)


if __name__ == '__main__':
    main()
