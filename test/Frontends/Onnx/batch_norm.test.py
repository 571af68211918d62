"""ONNX BatchNormalization against onnxruntime, the specification in
float64 and JAX, and its running statistics as training state.

    batch_norm.test.py DIR   exits 1 on any failure.

Inference mode: y = scale (x - mean) / sqrt(var + epsilon) + B per
channel (dimension 1). Training mode: mean and var are the batch's (over
every dimension but 1; the population variance), and the running
statistics are input * momentum + batch * (1 - momentum).

Forward: Y within 64 eps (float32's; 4 eps16 for f16 inputs, which trainc
normalizes in float32 and rounds once) times (1 + |y|) of the float64
reference: the statistics are sums of at most a few hundred terms over
values of order 1. Running statistics within 64 eps times (1 + |r|).
onnxruntime (graph optimizations off: on, they fold training-mode nodes
with the running statistics) is printed for scale.

Gradients (float32) of loss = sum(Y * c) with X, scale and B trainable,
against jax.grad in float64 within 1e-5 of the largest entry (a few
hundred eps); the statistics initializers are frozen (no gradient).

State: with --train, a training-mode node's running statistics are the
step's updates. With --optimizer none the batch and the weights stay, so
after k steps r_k = r_0 m^k + batch (1 - m^k) (m = momentum as the file's
float32), checked in the checkpoint after 3 steps and after resuming for
2 more; with --grad-accum 2 the micro-batches update them in turn; with 2
data-parallel ranks they are the mean of the ranks' (each normalizes with
its own batch); a NaN in the batch leaves its channel's as they were (the
step is skipped; the other channels update, as in PyTorch); an executable
compiled without --train leaves them as they are, run after run. Within
1e-6 of the largest entry (float32 sums of 100 terms).

Marks: a training-mode node's batch mean and variance are marked
train.batch_statistic (for --sync-batch-norm), an inference-mode node's
and --eval-mode's are not.
"""
import os
import subprocess

import jax
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from op_harness import WeightedLoss, compile_and_run, expect_rejections, run, run_checks

jax.config.update('jax_enable_x64', True)
import jax.numpy as jnp  # noqa: E402

RNG = np.random.default_rng(71)
EPS32 = float(np.finfo(np.float32).eps)
EPS16 = float(np.finfo(np.float16).eps)
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMP_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1', TRAINC_NUM_THREADS='1')


def reference(x, scale, b, mean, var, eps, momentum, training):
    """(y, running_mean, running_var, batch mean, batch var) in float64 by
    the specification (jnp: also differentiated)."""
    axes = tuple(d for d in range(x.ndim) if d != 1)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        bm = jnp.mean(x, axes)
        bv = jnp.mean((x - bm.reshape(shape)) ** 2, axes)
    else:
        bm, bv = mean, var
    y = (x - bm.reshape(shape)) / jnp.sqrt(bv.reshape(shape) + eps) * scale.reshape(shape) + \
        b.reshape(shape)
    return y, mean * momentum + bm * (1 - momentum), var * momentum + bv * (1 - momentum), bm, bv


class Case:
    """One BatchNormalization node on x_<name> with its initializers."""

    def __init__(self, name, shape, training, eps=1e-5, momentum=0.9, dtype=np.float32,
                 stats_dtype=np.float32, outputs=3):
        self.name, self.shape, self.training = name, shape, training
        self.eps, self.momentum, self.dtype, self.outputs = eps, momentum, dtype, outputs
        c = shape[1]
        self.params = {f'scale_{name}': RNG.uniform(0.5, 1.5, c).astype(stats_dtype),
                       f'b_{name}': RNG.standard_normal(c).astype(stats_dtype),
                       f'mean_{name}': RNG.standard_normal(c).astype(stats_dtype) * 0.5,
                       f'var_{name}': RNG.uniform(0.5, 2.0, c).astype(stats_dtype)}
        self.x = (RNG.standard_normal(shape) * 1.5 + 0.7).astype(dtype)

    def output_names(self):
        names = [f'y_{self.name}']
        if self.training:
            names += [f'rm_{self.name}', f'rv_{self.name}']
            if self.outputs == 5:
                names += [f'sm_{self.name}', f'sv_{self.name}']
        return names

    def node(self, opset):
        attrs = {'epsilon': self.eps, 'momentum': self.momentum}
        if opset >= 14:
            attrs['training_mode'] = int(self.training)
        return helper.make_node('BatchNormalization',
                                [f'x_{self.name}', *self.params], self.output_names(), **attrs)

    def want(self, x=None, training=None):
        """The float64 reference of every output, by name."""
        f64 = lambda v: jnp.asarray(v, jnp.float64)
        p = [f64(v) for v in self.params.values()]
        m = float(np.float32(self.momentum))
        got = reference(f64(self.x if x is None else x), *p, self.eps, m,
                        self.training if training is None else training)
        return dict(zip(self.output_names(), [np.asarray(v) for v in got]))


def elem(dtype):
    return {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}[dtype]


def model(cases, opset, path):
    nodes = [c.node(opset) for c in cases]
    inputs = [helper.make_tensor_value_info(f'x_{c.name}', elem(c.dtype), list(c.shape))
              for c in cases]
    outputs = [helper.make_tensor_value_info(
        n, elem(c.dtype) if n[0] in 'ys' else TensorProto.FLOAT, None)
        for c in cases for n in c.output_names()]
    inits = [numpy_helper.from_array(v, k) for c in cases for k, v in c.params.items()]
    onnx.save(helper.make_model(helper.make_graph(nodes, 'bn', inputs, outputs, inits),
                                opset_imports=[helper.make_opsetid('', opset)]), path)


def compare(label, got, want, tol):
    ratio = float(np.max(np.abs(got.astype(np.float64) - want) / (tol * (1 + np.abs(want)))))
    ok = got.shape == want.shape and ratio <= 1
    return ok, ratio


def forward(work):
    groups = [
        (15, 'f32', [Case('inf', (3, 4, 5, 6), False, eps=1e-3),
                     Case('train', (3, 4, 5, 6), True, momentum=0.8),
                     Case('train1d', (6, 5), True),
                     Case('train3d', (2, 3, 3, 4, 2), True)]),
        (13, 'f32_opset13', [Case('five', (4, 3, 4, 4), True, outputs=5),
                             Case('inf13', (2, 3, 4), False)]),
        (15, 'f16', [Case('half', (4, 3, 5, 5), True, dtype=np.float16),
                     Case('half_inf', (2, 3, 4, 4), False, dtype=np.float16)]),
    ]
    ok = True
    for opset, tag, cases in groups:
        path = os.path.join(work, f'forward_{tag}.onnx')
        model(cases, opset, path)
        feeds = {f'x_{c.name}': c.x for c in cases}
        out = compile_and_run(work, path, feeds)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            session = ort.InferenceSession(path, options, providers=['CPUExecutionProvider'])
            theirs = dict(zip([o.name for o in session.get_outputs()],
                              session.run(None, feeds)))
        except Exception as e:  # onnxruntime lacks some (opset 13 training)
            theirs, why = {}, str(e).splitlines()[0][:80]
        for c in cases:
            for name, want in c.want().items():
                tol = 4 * EPS16 if c.dtype == np.float16 and name.startswith(('y', 's')) \
                    else 64 * EPS32
                got = np.load(os.path.join(out, f'{name}.npy'))
                line_ok, ratio = compare(name, got, want, tol)
                ort_text = (f'onnxruntime {compare(name, theirs[name], want, tol)[1]:.3f}'
                            if name in theirs else f'onnxruntime: {why}')
                print(f'opset {opset} {name} {got.dtype}: worst {ratio:.3f} of the bound '
                      f'({ort_text}) {"ok" if line_ok else "FAIL"}')
                ok &= line_ok
    # --eval-mode: training-mode nodes normalize with the statistics given
    # and pass them through; opset 13's saved_mean and saved_var are still
    # the batch's.
    for opset, tag, cases in groups[:2]:
        path = os.path.join(work, f'forward_{tag}.onnx')
        out = compile_and_run(work, path, {f'x_{c.name}': c.x for c in cases}, ['--eval-mode'],
                              out=os.path.join(work, f'eval_mode_{tag}.out'))
        for c in cases:
            want = c.want(training=False)
            if c.training:
                batch = c.want()
                want[f'rm_{c.name}'] = c.params[f'mean_{c.name}']
                want[f'rv_{c.name}'] = c.params[f'var_{c.name}']
                for k in ('sm', 'sv'):
                    if f'{k}_{c.name}' in want:
                        want[f'{k}_{c.name}'] = batch[f'{k}_{c.name}']
            for name, w in want.items():
                line_ok, ratio = compare(name, np.load(os.path.join(out, f'{name}.npy')), w,
                                         64 * EPS32)
                print(f'--eval-mode opset {opset} {name}: worst {ratio:.3f} of the bound '
                      f'{"ok" if line_ok else "FAIL"}')
                ok &= line_ok
    return ok


def gradients(work):
    cases = [Case('g_train', (3, 4, 5, 5), True), Case('g_train1d', (8, 3), True),
             Case('g_inf', (2, 3, 4, 4), False)]
    loss = WeightedLoss()
    for c in cases:
        loss.add(f'y_{c.name}', RNG.uniform(0.5, 1.0, c.shape).astype(np.float32))
    inits = [numpy_helper.from_array(v, k) for c in cases
             for k, v in {**c.params, f'x_{c.name}': c.x}.items()]
    out = loss.gradients(work, [c.node(15) for c in cases], inits, 15)
    ok = True
    for c in cases:
        w = jnp.asarray(loss.feeds[f'c_y_{c.name}'], jnp.float64)
        names = [f'x_{c.name}', f'scale_{c.name}', f'b_{c.name}']
        fixed = [jnp.asarray(c.params[f'{k}_{c.name}'], jnp.float64) for k in ('mean', 'var')]

        def f(x, scale, b):
            return jnp.sum(w * reference(x, scale, b, *fixed, c.eps, 0.9, c.training)[0])
        want = jax.grad(f, (0, 1, 2))(*[jnp.asarray(c.x if n.startswith('x') else
                                                    c.params[n], jnp.float64) for n in names])
        for n, g in zip(names, want):
            got = np.load(os.path.join(out, f'{n}.grad.npy')).astype(np.float64)
            err = float(np.max(np.abs(got - np.asarray(g)))) / float(np.max(np.abs(g)))
            line_ok = err <= 1e-5
            print(f'{n}.grad: worst {err:.1e} of the largest entry {"ok" if line_ok else "FAIL"}')
            ok &= line_ok
        for k in ('mean', 'var'):
            frozen = not os.path.exists(os.path.join(out, f'{k}_{c.name}.grad.npy'))
            print(f'{k}_{c.name}: frozen, no gradient {"ok" if frozen else "FAIL"}')
            ok &= frozen
    return ok


def state_model(work, case, name, buffers=False):
    """case's node, then loss = sum(Y * c): a step whose batch is x and c.
    `buffers`: the statistics marked as buffers, as the dynamo exporter
    marks them (value_info metadata InputSpec.kind = BUFFER)."""
    loss = WeightedLoss()
    loss.add(f'y_{case.name}', RNG.uniform(0.5, 1.0, case.shape).astype(np.float32))
    graph = helper.make_graph(
        [case.node(15), *loss.nodes, helper.make_node('Sum', loss.terms, ['loss'])], name,
        [helper.make_tensor_value_info(f'x_{case.name}', TensorProto.FLOAT,
                                       list(case.shape)), *loss.inputs],
        [helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
        [numpy_helper.from_array(v, k) for k, v in case.params.items()])
    if buffers:
        for k in (f'mean_{case.name}', f'var_{case.name}'):
            info = helper.make_tensor_value_info(k, TensorProto.FLOAT, [case.shape[1]])
            info.metadata_props.add(key='pkg.torch.export.graph_signature.InputSpec.kind',
                                    value='BUFFER')
            graph.value_info.append(info)
    path = os.path.join(work, name + '.onnx')
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 15)]), path)
    feeds = {f'x_{case.name}': case.x, **loss.feeds}
    args = []
    for k, v in feeds.items():
        np.save(os.path.join(work, f'{name}_{k}.npy'), v)
        args += ['--input', f'{k}={os.path.join(work, f"{name}_{k}.npy")}']
    return path, args, feeds


def after(case, blends, x=None):
    """The running statistics after `blends` steps on the same batch."""
    m = float(np.float32(case.momentum))
    w = case.want(x)
    bm, bv = w[f'rm_{case.name}'], w[f'rv_{case.name}']  # one blend
    mean0, var0 = (case.params[f'{k}_{case.name}'].astype(np.float64) for k in ('mean', 'var'))
    batch_m, batch_v = (bm - mean0 * m) / (1 - m), (bv - var0 * m) / (1 - m)
    return (mean0 * m ** blends + batch_m * (1 - m ** blends),
            var0 * m ** blends + batch_v * (1 - m ** blends))


def stats_ok(label, weights, case, want):
    from safetensors.numpy import load_file
    got = load_file(weights)
    ok = True
    worst = 0.0
    for k, w in zip(('mean', 'var'), want):
        g = got[f'{k}_{case.name}'].astype(np.float64)
        worst = max(worst, float(np.max(np.abs(g - w))) / float(np.max(np.abs(w))))
    ok = worst <= 1e-6
    print(f'{label}: running statistics worst {worst:.1e} of the largest entry '
          f'{"ok" if ok else "FAIL"}')
    return ok


def chained_state(work, quiet):
    import onnxruntime as ort
    shape = (4, 3, 5, 5)
    inits = {'s': RNG.uniform(0.5, 1.5, 3), 'b': RNG.standard_normal(3),
             'm': RNG.standard_normal(3), 'v': RNG.uniform(0.5, 2.0, 3)}
    x = (RNG.standard_normal(shape) * 2 + 1).astype(np.float32)
    c = RNG.uniform(0.5, 1.0, shape).astype(np.float32)
    nodes = [helper.make_node('BatchNormalization', ['x', 's', 'b', 'm', 'v'],
                              ['y', 'rm', 'rv'], training_mode=1, momentum=0.8),
             helper.make_node('Mul', ['y', 'y'], ['yy']),
             helper.make_node('BatchNormalization', ['yy', 's', 'b', 'rm', 'rv'],
                              ['y2', 'rm2', 'rv2'], training_mode=1, momentum=0.8),
             helper.make_node('Mul', ['y2', 'c'], ['yc']),
             helper.make_node('ReduceSum', ['yc'], ['loss'], keepdims=0)]
    f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
    initializers = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()]
    ref = os.path.join(work, 'chained_ref.onnx')
    onnx.save(helper.make_model(helper.make_graph(
        nodes, 'g', [f32('x', list(shape)), f32('c', list(shape))],
        [f32('loss', []), f32('rm2', [3]), f32('rv2', [3])], initializers),
        opset_imports=[helper.make_opsetid('', 15)]), ref)
    want = ort.InferenceSession(ref, providers=['CPUExecutionProvider']).run(
        ['rm2', 'rv2'], {'x': x, 'c': c})
    path = os.path.join(work, 'chained.onnx')
    onnx.save(helper.make_model(helper.make_graph(
        nodes, 'g', [f32('x', list(shape)), f32('c', list(shape))], [f32('loss', [])],
        initializers), opset_imports=[helper.make_opsetid('', 15)]), path)
    step = os.path.join(work, 'chained.tcx')
    run(['trainc', path, '--train', '--optimizer', 'none', '-o', step])
    args = []
    for k, v in (('x', x), ('c', c)):
        np.save(os.path.join(work, f'chained_{k}.npy'), v)
        args += ['--input', f'{k}={os.path.join(work, f"chained_{k}.npy")}']
    weights = os.path.join(work, 'chained.safetensors')
    run(['trainc-run', step, *args, '--steps', '1', '--save-safetensors', weights, *quiet])
    from safetensors.numpy import load_file
    got = load_file(weights)
    worst = max(float(np.max(np.abs(got[k].astype(np.float64) - w) / np.max(np.abs(w))))
                for k, w in zip(('m', 'v'), want))
    ok = worst <= 1e-6
    print(f'a statistic updated by two chained nodes: the second blend of the first, '
          f'worst {worst:.1e} of onnxruntime\'s largest entry {"ok" if ok else "FAIL"}')
    return ok


def checkpoint_file(directory):
    name = open(os.path.join(directory, 'latest')).read().strip()
    return os.path.join(directory, name, 'rank-00000-of-00001.safetensors')


def state(work):
    case = Case('s', (4, 3, 5, 5), True, momentum=0.7)
    path, args, feeds = state_model(work, case, 'state')
    ok = True
    # Training runs write their outputs (the metrics) here, not into '.'.
    quiet = ['--no-progress', '--output-dir', os.path.join(work, 'step_out')]
    step = os.path.join(work, 'state.tcx')
    run(['trainc', path, '--train', '--optimizer', 'none', '-o', step])
    ckpt = os.path.join(work, 'ckpt')
    run(['trainc-run', step, *args, '--steps', '3', '--save-state', ckpt, *quiet])
    ok &= stats_ok('3 steps, checkpoint', checkpoint_file(ckpt), case, after(case, 3))
    run(['trainc-run', step, *args, '--steps', '2', '--save-state', ckpt, '--resume', ckpt,
         *quiet])
    ok &= stats_ok('resumed to 5 steps', checkpoint_file(ckpt), case, after(case, 5))

    # --unbiased-running-var: the batch's variance blended is n / (n - 1)
    # times the population one (n = 4 * 5 * 5 elements per channel), as
    # PyTorch's BatchNorm blends it.
    unbiased = os.path.join(work, 'unbiased.tcx')
    run(['trainc', path, '--train', '--optimizer', 'none', '--unbiased-running-var',
         '-o', unbiased])
    weights = os.path.join(work, 'unbiased.safetensors')
    run(['trainc-run', unbiased, *args, '--steps', '3', '--save-safetensors', weights,
         *quiet])
    m = float(np.float32(case.momentum))
    mean3, var3 = after(case, 3)
    var0 = case.params['var_s'].astype(np.float64)
    n = 4 * 5 * 5
    batch_v = (var3 - var0 * m ** 3) / (1 - m ** 3)
    ok &= stats_ok('--unbiased-running-var, 3 steps', weights, case,
                   [mean3, var0 * m ** 3 + batch_v * n / (n - 1) * (1 - m ** 3)])

    # Statistics the dynamo exporter marks as buffers (other buffers become
    # constants): still state the step updates.
    path_b, args_b, _ = state_model(work, case, 'state_buffers', buffers=True)
    step_b = os.path.join(work, 'state_buffers.tcx')
    run(['trainc', path_b, '--train', '--optimizer', 'none', '-o', step_b])
    weights = os.path.join(work, 'buffers.safetensors')
    run(['trainc-run', step_b, *args_b, '--steps', '2', '--save-safetensors', weights, *quiet])
    ok &= stats_ok('statistics marked as buffers, 2 steps', weights, case, after(case, 2))

    # A module called twice, as torch.export's exporter writes it: the
    # second node reads the first's running outputs, so the step's update
    # is the second blend of the first (onnxruntime's rm2 and rv2).
    ok &= chained_state(work, quiet)

    # Without --train: the running outputs are values; the state stays.
    forward_exe = os.path.join(work, 'state_forward.tcx')
    run(['trainc', path, '-o', forward_exe])
    weights = os.path.join(work, 'forward.safetensors')
    run(['trainc-run', forward_exe, *args, '--repeat', '3', '--save-safetensors', weights,
         '--output-dir', os.path.join(work, 'forward_out')])
    ok &= stats_ok('inference executable, 3 runs', weights, case,
                   [case.params[f'{k}_s'].astype(np.float64) for k in ('mean', 'var')])

    # Two micro-batches: the second blends into what the first left.
    x2 = (RNG.standard_normal(case.shape) * 1.5 + 0.7).astype(np.float32)
    wide = {k: np.concatenate([v, v if k != 'x_s' else x2]) for k, v in feeds.items()}
    wide_args = []
    for k, v in wide.items():
        np.save(os.path.join(work, f'wide_{k}.npy'), v)
        wide_args += ['--input', f'{k}={os.path.join(work, f"wide_{k}.npy")}']
    accum = os.path.join(work, 'accum.tcx')
    run(['trainc', path, '--train', '--optimizer', 'none', '--grad-accum', '2', '-o', accum])
    weights = os.path.join(work, 'accum.safetensors')
    run(['trainc-run', accum, *wide_args, '--steps', '1', '--save-safetensors', weights,
         *quiet])
    m = float(np.float32(case.momentum))
    first, second = after(case, 1), after(case, 1, x2)
    mean0, var0 = (case.params[f'{k}_s'].astype(np.float64) for k in ('mean', 'var'))
    chained = [s - v0 * m + f * m for f, s, v0 in zip(first, second, (mean0, var0))]
    ok &= stats_ok('--grad-accum 2', weights, case, chained)

    # Two data-parallel ranks, each on its half of the batch: the mean of
    # the ranks' running statistics.
    dp = os.path.join(work, 'dp.tcx')
    run(['trainc', path, '--train', '--optimizer', 'none', '--mesh', 'data=2',
         '--data-parallel', '-o', dp])
    weights = os.path.join(work, 'dp.safetensors')
    r = subprocess.run(['mpirun', '--oversubscribe', '-np', '2', 'trainc-run', dp, *wide_args,
                        '--steps', '1', '--save-safetensors', weights, *quiet],
                       capture_output=True, text=True, env=MPI_ENV, timeout=300)
    if r.returncode != 0:
        print(f'data parallel: mpirun failed ({r.returncode}): {r.stderr[-400:]} FAIL')
        ok = False
    else:
        ok &= stats_ok('2 data-parallel ranks', weights, case,
                       [(f + s) / 2 for f, s in zip(first, second)])

    # A NaN in the batch: the step is skipped; the channel it is in keeps
    # its statistics, the others take this batch's (as PyTorch's forward
    # updates them whether or not the optimizer steps).
    bad = case.x.copy()
    bad[0, 0, 0, 0] = np.nan
    np.save(os.path.join(work, 'nan_x.npy'), bad)
    nan_args = [a if not a.startswith('x_s=') else f'x_s={os.path.join(work, "nan_x.npy")}'
                for a in args]
    adamw = os.path.join(work, 'adamw.tcx')
    run(['trainc', path, '--train', '-o', adamw])
    weights = os.path.join(work, 'nan.safetensors')
    r = subprocess.run(['trainc-run', adamw, *nan_args, '--steps', '1', '--save-safetensors',
                        weights, *quiet], capture_output=True, text=True)
    skipped = 'skipped' in r.stdout + r.stderr and os.path.exists(weights)
    print(f'NaN batch: step skipped {"ok" if skipped else "FAIL"}')
    blended = after(case, 1)
    kept = [np.concatenate([v0[:1], b[1:]]) for v0, b in zip((mean0, var0), blended)]
    ok &= skipped and stats_ok('NaN batch', weights, case, kept)
    return ok


def errors(work):
    f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)

    def graph(x_shape, c=3, outputs=('y',), stats=('m', 'v'), extra=(), **attrs):
        inits = [numpy_helper.from_array(np.ones(c, np.float32), n)
                 for n in ('s', 'b', 'm', 'v')]
        nodes = [helper.make_node('BatchNormalization', ['x', 's', 'b', *stats], list(outputs),
                                  **attrs), *extra]
        return helper.make_graph(nodes, 'g', [f32('x', list(x_shape))],
                                 [f32(o, None) for o in outputs[:1]], inits)
    second = helper.make_node('BatchNormalization', ['y', 's', 'b', 'm', 'v'],
                              ['y2', 'rm2', 'rv2'], training_mode=1)
    half_stats = helper.make_node('Cast', ['v'], ['v16'], to=TensorProto.FLOAT16)
    cases = [
        ('bad_channels', graph((2, 4, 3)), 'scale must have shape [4]'),
        ('bad_rank', graph((3,)), 'needs an input [N, C, D...]'),
        ('bad_mode', graph((2, 3, 4), training_mode=2), 'training_mode 2 is not 0 or 1'),
        ('running_in_inference', graph((2, 3, 4), outputs=('y', 'rm', 'rv')),
         'running_mean and running_var are outputs of training mode'),
        ('bad_momentum', graph((2, 3, 4), training_mode=1, momentum=1.5),
         'is not in [0, 1]'),
        ('empty_batch', graph((0, 3, 4), outputs=('y', 'rm', 'rv'), training_mode=1),
         'training mode needs at least one element per channel'),
        ('mixed_stats', graph((2, 3, 4), stats=('m', 'v16'), extra=(), training_mode=0),
         'input_mean and input_var must have one element type'),
    ]
    # The Cast that makes v16 comes first.
    g = cases[-1][1]
    g.node.insert(0, half_stats)
    ok = expect_rejections(work, cases, 15)

    def refused(name, graph_, opset, flags, message, suffix='.onnx', names_file=True):
        path = os.path.join(work, name + suffix)
        if graph_ is not None:
            onnx.save(helper.make_model(graph_, opset_imports=[helper.make_opsetid('', opset)]),
                      path)
        r = subprocess.run(['trainc', path, *flags, '-o', path + '.tcx'], capture_output=True,
                           text=True)
        good = r.returncode == 1 and message in r.stderr and (name in r.stderr or
                                                              not names_file)
        print(f'{name}: exit {r.returncode}, '
              f'{"names the problem" if good else repr(r.stderr.strip())} '
              f'{"ok" if good else "FAIL"}')
        return good
    # Two nodes updating one running statistic in one step.
    twice = graph((2, 3, 4), outputs=('y', 'rm', 'rv'), training_mode=1, extra=(second,))
    twice.output[0].name = 'y2'
    ok &= refused('updated_twice', twice, 15, ['--train'],
                  "updates the running statistic 'm' from its value before another "
                  "BatchNormalization's update of it in this step")
    # A third node reading the first's running outputs, after the second
    # (chained) already did: a branch, not a chain.
    branch = graph((2, 3, 4), outputs=('y', 'rm', 'rv'), training_mode=1, extra=(
        helper.make_node('BatchNormalization', ['y', 's', 'b', 'rm', 'rv'],
                         ['y2', 'rm2', 'rv2'], training_mode=1),
        helper.make_node('BatchNormalization', ['y2', 's', 'b', 'rm', 'rv'],
                         ['y3', 'rm3', 'rv3'], training_mode=1)))
    branch.output[0].name = 'y3'
    ok &= refused('updated_from_stale', branch, 15, ['--train'],
                  "updates the running statistic 'm' from its value before another "
                  "BatchNormalization's update of it in this step")
    # Only running statistics as initializers: nothing to train.
    only_stats = helper.make_graph(
        [helper.make_node('Constant', [], [n], value=numpy_helper.from_array(
            np.ones(3, np.float32), n)) for n in ('s', 'b')] +
        [helper.make_node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], ['y']),
         helper.make_node('ReduceSum', ['y'], ['loss'], keepdims=0)], 'g',
        [f32('x', [2, 3, 4])], [f32('loss', [])],
        [numpy_helper.from_array(np.ones(3, np.float32), n) for n in ('m', 'v')])
    ok &= refused('only_statistics', only_stats, 15, ['--train'],
                  'optimizer: no parameter is trained', names_file=False)
    shared = graph((2, 3, 4), stats=('s', 'v'))
    ok &= refused('scale_is_statistic', shared, 15, [],
                  "'s' is both a running statistic, which is frozen state, and the scale")
    hlo = os.path.join(work, 'jax_fn.mlir')
    with open(hlo, 'w') as f:
        f.write('func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n'
                '  %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>\n'
                '  return %0 : tensor<2xf32>\n}\n')
    ok &= refused('jax_fn', None, 0, ['--eval-mode'], '--eval-mode applies to ONNX models',
                  suffix='.mlir')
    ok &= refused('jax_fn', None, 0, ['--unbiased-running-var'],
                  '--unbiased-running-var applies to ONNX models', suffix='.mlir')
    # One element a channel has no unbiased variance (n - 1 = 0).
    single = graph((1, 3), outputs=('y', 'rm', 'rv'), training_mode=1)
    ok &= refused('single_element', single, 15, ['--train', '--unbiased-running-var'],
                  '--unbiased-running-var needs at least 2 elements per channel')
    return ok


def marks(work):
    """The batch's mean and variance of a training-mode node are marked
    train.batch_statistic (what --sync-batch-norm takes over the data
    ranks): two a node; none in inference mode or with --eval-mode."""
    ok = True
    train_case, infer_case = (Case('t', (4, 3, 5), True), Case('i', (4, 3, 5), False))
    for opset in (13, 15):
        path = os.path.join(work, f'marks_{opset}.onnx')
        model([train_case, infer_case], opset, path)
        for flags, want in (([], 2), (['--eval-mode'], 0)):
            text = run(['trainc', path, '--compile-to=import', *flags]).stdout
            got = text.count('train.batch_statistic')
            good = got == want and (not want or text.count(
                'graph.reduce_mean') >= want)
            ok &= good
            print(f'marks opset {opset} {" ".join(flags) or "(training)"}: '
                  f'{got} marked, want {want} -> {"ok" if good else "FAILED"}')
    return ok


def main():
    run_checks(forward, gradients, state, marks, errors)


if __name__ == '__main__':
    main()
