"""Export a JAX loss function as StableHLO text and safetensors for trainc.

This is the only step of JAX training through trainc that uses JAX: the
files it writes are compiled by `trainc` and run by `trainc-run` with no JAX
(and no Python) at compile or run time.

    python tools/jax_export.py model.py:loss_fn --params-fn model.py:init_params \\
        --batch-fn model.py:example_batch -o out/model --save-batch
    build/bin/trainc out/model.mlir --params out/model.safetensors --train \\
        --optimizer adamw --lr 1e-3 -o out/step.tcx
    build/bin/trainc-run out/step.tcx --input "batch['tokens']=out/model.batch.tokens.npy" ...

Given `loss_fn(params, batch) -> scalar`, the initial `params` (any pytree
of float arrays) and an example `batch` (a pytree of arrays of the shapes
and dtypes training will use), it writes

  PREFIX.mlir         the text of
                      jax.export.export(jax.jit(loss_fn, keep_unused=True))
                      (params, batch).mlir_module(): one public function
                      @main whose arguments are the pytree leaves, each
                      named by its location, and whose one result is the
                      loss (chlo ops already lowered to plain stablehlo);
  PREFIX.safetensors  the initial params, one tensor per leaf, keyed by
                      exactly that leaf's argument name (dtype and shape of
                      the argument);
  PREFIX.<name>.npy   with --save-batch (save_batch=True): each batch leaf,
                      <name> being its path with everything but letters,
                      digits, '_' and '-' turned into '.' (batch['tokens']
                      -> PREFIX.batch.tokens.npy).

Argument names. JAX names each argument of @main by its pytree path: the
loss function's parameter name followed by jax.tree_util.keystr of the
leaf's path, e.g. for `def loss_fn(params, batch)`:

    dict key            params['wte'], params['blocks'][0]['attn']['wqkv']
    list / tuple item   params[0]['w']
    dataclass field     params['layers'][0].w   (jax.tree_util.register_dataclass)
    namedtuple field    params['opt'].mu
    a bare array        params
    batch leaves        batch['tokens'], batch[0]

String keys are printed with repr() (so a key holding a single quote is
written in double quotes); None leaves are absent. A function `lambda p, b:`
gives p[...] and b[...]; one taking `*args` gives args[0][...]. Leaves come
in jax.tree_util.tree_flatten order (dict keys sorted). In the .mlir text
the name is an MLIR string: `"` and non-printable bytes are escaped as \\XX,
a backslash as \\\\. trainc's importer treats an argument whose name is a
key of the --params safetensors as a trainable parameter and every other
argument as a data input of that name (`trainc-run --input NAME=FILE`;
since NAME ends at the first '=', a key containing '=' cannot be a data
input). trainc-run writes a parameter's gradient as
`--output-dir/<name>.grad.npy` with '/', '\\' and ':' in the name replaced
by '_'.

Every parameter becomes an argument even when the loss does not use it
(keep_unused=True; plain jax.jit would drop it and its name), so every
parameter of the safetensors file is an argument of @main. The names
derived from the loss function's signature are checked against the names
in the exported text; a difference is an error.

Gradients. trainc differentiates the exported forward computation, where
JAX's gradient rules leave no trace: jax.custom_vjp's backward function and
jax.lax.stop_gradient (lowered as the identity). export() therefore refuses
a loss that uses jax.custom_vjp, and, when the loss uses stop_gradient,
compares jax.grad of the loss with jax.grad of the same loss with
stop_gradient passing its gradient through, at the example params and batch:
where they differ, trainc would train on another gradient than JAX's, and
export() refuses it naming the parameter. The stop_gradients inside
jax.nn.logsumexp, log_softmax and softmax change no gradient and pass.
(check_gradients=False skips both checks.)

load_params() reads the safetensors file trainc-run writes after training
(`--save-safetensors FILE`, the same names) back into the structure and
dtypes of the initial params.

Needs jax, numpy and safetensors.
"""
import argparse
import dataclasses
import importlib
import importlib.util
import inspect
import os
import re
import sys

import jax
import jax.numpy as jnp
import numpy as np
import safetensors.numpy


class ExportError(Exception):
    """The function, its arguments or the exported module are not what trainc needs."""


@dataclasses.dataclass
class Exported:
    """What export() wrote and the names trainc will use."""
    mlir_path: str
    safetensors_path: str
    #: Names of the parameters, in @main's argument order (the safetensors keys).
    param_names: list
    #: Names of the data inputs (the batch leaves), in @main's argument order.
    input_names: list
    #: Data input name -> .npy path, when the batch was saved.
    input_files: dict
    #: The prefix of the parameter names (the loss function's first parameter).
    params_prefix: str
    #: The prefix of the data input names (its second).
    batch_prefix: str
    #: The jax.export.Exported object.
    exported: object


def argument_prefixes(loss_fn, params, batch):
    """The names JAX gives the two arguments of loss_fn(params, batch).

    Mirrors JAX's naming: the bound parameter name, or NAME[i] for the i-th
    value of a *NAME parameter; 'args[0]', 'args[1]' when loss_fn has no
    signature.
    """
    try:
        sig = inspect.signature(loss_fn)
        bound = sig.bind(params, batch)
    except (TypeError, ValueError):
        return 'args[0]', 'args[1]'
    names = []
    for name, value in bound.arguments.items():
        if sig.parameters[name].kind == inspect.Parameter.VAR_POSITIONAL:
            names += [f'{name}[{i}]' for i in range(len(value))]
        elif sig.parameters[name].kind == inspect.Parameter.VAR_KEYWORD:
            raise ExportError(f'loss_fn binds positional arguments to **{name}')
        else:
            names.append(name)
    if len(names) != 2:
        raise ExportError(f'loss_fn binds (params, batch) to {names}, not to two parameters')
    return names[0], names[1]


def leaf_names(prefix, tree):
    """[(name, leaf)] for every leaf of tree, named as JAX names arguments."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [(prefix + jax.tree_util.keystr(path), leaf) for path, leaf in leaves]


def _unescape_mlir_string(body):
    """The string an MLIR string literal's body (between the quotes) denotes."""
    out, i = bytearray(), 0
    simple = {'n': b'\n', 't': b'\t', '"': b'"', '\\': b'\\'}
    while i < len(body):
        c = body[i]
        if c != '\\':
            out += c.encode('utf-8')
            i += 1
        elif body[i + 1] in simple:
            out += simple[body[i + 1]]
            i += 2
        else:
            out.append(int(body[i + 1:i + 3], 16))
            i += 3
    return out.decode('utf-8')


_STRING = r'"((?:[^"\\]|\\.)*)"'


def main_argument_names(mlir_text):
    """The location name of each argument of @main, in order.

    An argument's location is either inline (`%arg0: tensor<4xf32>
    loc("params['b']")`) or an alias (`loc(#loc3)`) defined at the end of
    the module as `#loc3 = loc("params['b']")`. Raises ExportError for an
    argument without a name.
    """
    start = re.search(r'func\.func\s+(?:public\s+)?@main\(', mlir_text)
    if not start:
        raise ExportError('the exported module has no function @main')
    # Split the argument list at top-level commas, skipping string literals.
    args, depth, i, begin = [], 0, start.end(), start.end()
    while True:
        c = mlir_text[i]
        if c == '"':
            i = re.compile(_STRING).match(mlir_text, i).end()
            continue
        if c in '(<[{':
            depth += 1
        elif c in ')>]}' and not (c == '>' and mlir_text[i - 1] == '-'):
            if depth == 0:
                args.append(mlir_text[begin:i])
                break
            depth -= 1
        elif c == ',' and depth == 0:
            args.append(mlir_text[begin:i])
            begin = i + 1
        i += 1
    aliases = {m.group(1): _unescape_mlir_string(m.group(2)) for m in
               re.finditer(r'^(#loc\d*) = loc\(' + _STRING + r'\)\s*$', mlir_text, re.M)}
    names = []
    for arg in (a.strip() for a in args if a.strip()):
        inline = re.search(r'loc\(' + _STRING + r'\)$', arg)
        alias = re.search(r'loc\((#loc\d*)\)$', arg)
        if inline:
            names.append(_unescape_mlir_string(inline.group(1)))
        elif alias and alias.group(1) in aliases:
            names.append(aliases[alias.group(1)])
        else:
            raise ExportError(f'argument of @main has no name location: {arg[:120]}')
    return names


def file_stem(name):
    """A file-name-safe form of an argument name: batch['tokens'] -> batch.tokens."""
    return re.sub(r'[^A-Za-z0-9_-]+', '.', name).strip('.') or 'input'


def _primitive_names(closed_jaxpr):
    """Every primitive of a jaxpr, those of its sub-jaxprs included."""
    from jax.extend import core
    names = set()

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            names.add(eqn.primitive.name)
            for value in eqn.params.values():
                for sub in value if isinstance(value, (list, tuple)) else (value,):
                    if isinstance(sub, core.ClosedJaxpr):
                        walk(sub.jaxpr)
                    elif isinstance(sub, core.Jaxpr):
                        walk(sub)

    walk(closed_jaxpr.jaxpr)
    return names


def _grad_with_stop_gradient_passing(loss_fn, params, batch):
    """jax.grad of loss_fn with stop_gradient's JVP the identity: the
    gradient of the computation as exported (stop_gradient lowers to the
    identity), the one trainc computes."""
    from jax._src import ad_util
    from jax._src.interpreters import ad
    primitive = ad_util.stop_gradient_p
    saved = ad.primitive_jvps[primitive]
    ad.primitive_jvps[primitive] = lambda primals, tangents: (
        primitive.bind(*primals), tangents[0])
    jax.clear_caches()  # no jitted function keeps the real rule
    try:
        return jax.grad(loss_fn)(params, batch)
    finally:
        ad.primitive_jvps[primitive] = saved
        jax.clear_caches()


def check_gradient_rules(loss_fn, params, batch, param_names):
    """Raises ExportError when JAX's gradient of loss_fn is not the gradient
    of its exported forward computation (see the module docstring)."""
    names = _primitive_names(jax.make_jaxpr(loss_fn)(params, batch))
    custom = sorted(n for n in names if n.startswith('custom_vjp'))
    if custom:
        raise ExportError(
            'loss_fn uses jax.custom_vjp: trainc differentiates the exported forward '
            'computation, in which a custom backward function does not survive, so it '
            'would train on another gradient than jax.grad gives. Write the function '
            'without custom_vjp (a custom_jvp of plain ops, or the plain ops)')
    if 'stop_gradient' not in names:
        return
    exact = jax.tree_util.tree_leaves(jax.grad(loss_fn)(params, batch))
    through = jax.tree_util.tree_leaves(
        _grad_with_stop_gradient_passing(loss_fn, params, batch))
    largest = max((float(np.max(np.abs(np.asarray(a, np.float64)), initial=0))
                   for a in exact), default=0.0)
    for name, a, b in zip(param_names, exact, through):
        # Rounding differs between the two (they are different programs):
        # f32 gradients agree to ~1e-6 of the largest value involved, 16-bit
        # ones to ~1e-2; a stop_gradient that matters changes them by O(1).
        # A gradient that is exactly zero in exact arithmetic (an attention
        # key bias: softmax ignores a shift shared by every key) is pure
        # rounding noise, so each tensor is measured against at least 1% of
        # the largest gradient of all.
        tolerance = 1e-3 if jnp.finfo(a.dtype).bits >= 32 else 5e-2
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        scale = max(float(np.max(np.abs(a), initial=0)), 1e-2 * largest, 1e-30)
        error = float(np.max(np.abs(a - b), initial=0)) / scale
        if not np.isfinite(error) or error > tolerance:
            raise ExportError(
                f'jax.lax.stop_gradient changes the gradient of parameter {name!r} '
                f'({error:.2g} of its largest value at the example batch), but the '
                'exported computation has no trace of it: trainc would differentiate '
                'through it and train on another gradient than jax.grad gives. Pass the '
                'stopped value in the batch instead (computed outside loss_fn)')


def export(loss_fn, params, batch, out_prefix, *, save_batch=False, platform='cpu',
           check_gradients=True):
    """Export loss_fn(params, batch) for trainc; see the module docstring.

    Args:
      loss_fn: a function (params, batch) -> float scalar, traceable by jax.jit.
      params: the initial parameters, a pytree whose leaves are float arrays.
      batch: an example batch, a pytree of arrays (shapes and dtypes fixed
        by it: trainc compiles for exactly these).
      out_prefix: path prefix of the files written; its directory is created.
      save_batch: also write each batch leaf as out_prefix.<name>.npy.
      platform: the jax.export lowering platform ('cpu', 'cuda', 'rocm', 'tpu').
      check_gradients: refuse a loss whose JAX gradient trainc would not
        compute (jax.custom_vjp, a stop_gradient that matters; see the
        module docstring). It costs two jax.grad evaluations when the loss
        uses stop_gradient.

    Returns an Exported. Raises ExportError when params has a non-float
    leaf, the loss is not a float scalar, JAX named the arguments other
    than expected, or (check_gradients) the gradient would differ.
    """
    params_prefix, batch_prefix = argument_prefixes(loss_fn, params, batch)
    param_leaves = leaf_names(params_prefix, params)
    batch_leaves = leaf_names(batch_prefix, batch)
    if not param_leaves:
        raise ExportError('params has no array leaves')
    for name, leaf in param_leaves:
        if not jnp.issubdtype(jnp.result_type(leaf), jnp.floating):
            raise ExportError(f'parameter {name!r} has dtype {jnp.result_type(leaf)}: '
                              'every parameter must be a float array (put integer data in batch)')

    # The result's type first: the gradient check below would fail on a
    # loss that returns more (Flax's (loss, batch_stats)) with JAX's own
    # "Gradient only defined for scalar-output functions".
    out = jax.tree_util.tree_leaves(jax.eval_shape(loss_fn, params, batch))
    if len(out) != 1 or out[0].shape != () or not jnp.issubdtype(out[0].dtype, jnp.floating):
        raise ExportError('loss_fn must return one float scalar, not ' +
                          ', '.join(f'{o.dtype}{list(o.shape)}' for o in out))
    if check_gradients:
        check_gradient_rules(loss_fn, params, batch, [n for n, _ in param_leaves])
    exported = jax.export.export(jax.jit(loss_fn, keep_unused=True),
                                 platforms=[platform])(params, batch)
    text = exported.mlir_module()

    expected = [n for n, _ in param_leaves] + [n for n, _ in batch_leaves]
    got = main_argument_names(text)
    if got != expected:
        missing = [n for n in expected if n not in got]
        extra = [n for n in got if n not in expected]
        raise ExportError(
            'JAX named the arguments of @main differently from the pytree paths '
            f'(prefixes {params_prefix!r}, {batch_prefix!r} from the signature of loss_fn): '
            f'expected {expected}, exported {got}; missing {missing}, unexpected {extra}')
    avals = exported.in_avals
    if len(avals) != len(expected):
        raise ExportError(f'{len(avals)} argument types for {len(expected)} names')

    directory = os.path.dirname(os.path.abspath(out_prefix))
    os.makedirs(directory, exist_ok=True)
    mlir_path, st_path = out_prefix + '.mlir', out_prefix + '.safetensors'
    with open(mlir_path, 'w') as f:
        f.write(text)
    tensors = {}
    for (name, leaf), aval in zip(param_leaves, avals):
        tensors[name] = np.ascontiguousarray(np.asarray(leaf, dtype=aval.dtype))
        assert tensors[name].shape == aval.shape, name
    safetensors.numpy.save_file(tensors, st_path)

    input_files = {}
    if save_batch:
        stems = {}
        for (name, leaf), aval in zip(batch_leaves, avals[len(param_leaves):]):
            stem = file_stem(name)
            if stem in stems:
                raise ExportError(f"batch leaves '{stems[stem]}' and '{name}' "
                                  f'would both be written as {out_prefix}.{stem}.npy')
            stems[stem] = name
            path = f'{out_prefix}.{stem}.npy'
            np.save(path, np.asarray(leaf, dtype=aval.dtype))
            input_files[name] = path
    return Exported(mlir_path, st_path, [n for n, _ in param_leaves],
                    [n for n, _ in batch_leaves], input_files, params_prefix,
                    batch_prefix, exported)


def load_params(safetensors_path, like_params, prefix='params'):
    """Read a safetensors file of parameters into the structure of like_params.

    The file's keys must be exactly the names export() gives the leaves of
    like_params (prefix + keystr(path)), as in the file export() wrote and
    the one `trainc-run --save-safetensors` writes. Each tensor must have
    its leaf's shape; it is converted to the leaf's dtype. Returns a pytree
    of jax arrays; raises ValueError naming every missing, extra or
    misshapen tensor.
    """
    return params_from_dict(safetensors.numpy.load_file(safetensors_path),
                            like_params, prefix, safetensors_path)


def params_from_dict(stored, like_params, prefix='params', source='the state'):
    """load_params for tensors already in memory: `stored` maps the names
    export() gives the leaves of like_params to arrays."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(like_params)
    names = [prefix + jax.tree_util.keystr(path) for path, _ in leaves]
    missing = [n for n in names if n not in stored]
    extra = sorted(set(stored) - set(names))
    shapes = [f'{n}: {stored[n].shape} in the file, {np.shape(leaf)} expected'
              for n, (_, leaf) in zip(names, leaves)
              if n in stored and stored[n].shape != np.shape(leaf)]
    if missing or extra or shapes:
        problems = []
        if missing:
            problems.append(f'missing {missing}')
        if extra:
            problems.append(f'not parameters {extra}')
        if shapes:
            problems.append(f'wrong shapes {shapes}')
        raise ValueError(f'{source} does not hold the parameters of this '
                         f'pytree (prefix {prefix!r}): ' + '; '.join(problems))
    values = [jnp.asarray(stored[n], dtype=jnp.result_type(leaf))
              for n, (_, leaf) in zip(names, leaves)]
    return jax.tree_util.tree_unflatten(treedef, values)


def _load_attr(spec):
    """The object named by FILE.py:ATTR or MODULE:ATTR (ATTR may be dotted)."""
    if ':' not in spec:
        raise SystemExit(f"'{spec}': expected FILE.py:NAME or MODULE:NAME")
    where, attr = spec.rsplit(':', 1)
    if where.endswith('.py'):
        path = os.path.abspath(where)
        name = 'jax_export_user_' + re.sub(r'\W', '_', path)
        module = sys.modules.get(name)
        if module is None:
            if not os.path.exists(path):
                raise SystemExit(f'{where}: no such file')
            spec_ = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec_)
            sys.modules[name] = module
            sys.path.insert(0, os.path.dirname(path))
            spec_.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    obj = module
    for part in attr.split('.'):
        if not hasattr(obj, part):
            raise SystemExit(f"'{spec}': {where} has no '{attr}'")
        obj = getattr(obj, part)
    return obj


def _call_with_key(fn, seed):
    """fn(jax.random.key(seed)), or fn() when fn takes no arguments."""
    try:
        takes_key = len(inspect.signature(fn).parameters) > 0
    except (TypeError, ValueError):
        takes_key = True
    return fn(jax.random.key(seed)) if takes_key else fn()


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__,
        epilog='Prints the names it wrote and the trainc and trainc-run commands '
               'that use the files.',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('loss', metavar='FILE.py:LOSS_FN',
                        help='the loss function loss_fn(params, batch) -> scalar, as '
                             'FILE.py:NAME or MODULE:NAME (NAME may be dotted, e.g. '
                             'models.py:GPT.loss_fn)')
    parser.add_argument('--params-fn', required=True, metavar='FILE.py:FN',
                        help='a function returning the initial params (a pytree of float '
                             'arrays); called as FN(jax.random.key(--seed)), or FN() when '
                             'it takes no argument')
    parser.add_argument('--batch-fn', required=True, metavar='FILE.py:FN',
                        help='a function returning an example batch (a pytree of arrays '
                             'with the shapes and dtypes of training); called as '
                             'FN(jax.random.key(--batch-seed)), or FN()')
    parser.add_argument('-o', '--output', required=True, metavar='PREFIX',
                        help='path prefix of the files written (directories are created)')
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of the key passed to --params-fn (default 0)')
    parser.add_argument('--batch-seed', type=int, default=1,
                        help='seed of the key passed to --batch-fn (default 1)')
    parser.add_argument('--save-batch', action='store_true',
                        help='also write each batch leaf as PREFIX.<name>.npy, the '
                             'files to give trainc-run --input')
    parser.add_argument('--no-gradient-check', action='store_true',
                        help='skip the check that trainc computes the gradient jax.grad '
                             'gives (jax.custom_vjp and stop_gradients that matter are '
                             'refused; the check costs two jax.grad evaluations)')
    parser.add_argument('--platform', default='cpu',
                        help="jax.export's lowering platform (default cpu; cuda, rocm, "
                             'tpu); it changes only platform-specific lowerings')
    args = parser.parse_args(argv)

    loss_fn = _load_attr(args.loss)
    params = _call_with_key(_load_attr(args.params_fn), args.seed)
    batch = _call_with_key(_load_attr(args.batch_fn), args.batch_seed)
    try:
        result = export(loss_fn, params, batch, args.output,
                        save_batch=args.save_batch, platform=args.platform,
                        check_gradients=not args.no_gradient_check)
    except ExportError as e:
        print(f'jax_export: {e}', file=sys.stderr)
        return 1
    count = sum(int(np.prod(np.shape(leaf))) for leaf in jax.tree_util.tree_leaves(params))
    print(f'{result.mlir_path}: @main with {len(result.param_names)} parameters '
          f'({count} values) and {len(result.input_names)} data inputs')
    print(f'{result.safetensors_path}: {", ".join(result.param_names)}')
    for name in result.input_names:
        print(f'input {name}' + (f': {result.input_files[name]}' if name in result.input_files
                                 else ''))
    inputs = ' '.join(f'--input "{n}={result.input_files.get(n, "FILE.npy")}"'
                      for n in result.input_names)
    print('\nto train:\n'
          f'  trainc {result.mlir_path} --params {result.safetensors_path} --train '
          f'--optimizer adamw -o {args.output}.tcx\n'
          f'  trainc-run {args.output}.tcx {inputs} --steps 10 '
          f'--save-safetensors {args.output}.trained.safetensors')
    return 0


if __name__ == '__main__':
    sys.exit(main())
