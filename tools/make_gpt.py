#!/usr/bin/env python3
"""Write a small GPT-2-style language model as an ONNX training graph.

    python3 tools/make_gpt.py gpt.onnx --vocab 256 --seq 64 --batch 8 \\
        --d-model 128 --heads 4 --layers 2

The graph takes `tokens` and `targets` (int64 [batch, seq]) and returns one
scalar f32 output, `loss`: the mean softmax cross-entropy of the next-token
logits over all batch * seq positions. It is what `trainc --train` expects.

Architecture (pre-LayerNorm GPT-2):

    x = wte[tokens] + wpe[0..seq-1]
    per layer i:  x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))
    logits = ln_f(x) @ wte^T            (--tied; --untied uses lm_head.weight)

with causal multi-head self-attention (one fused c_attn projection split into
q, k, v; softmax(q k^T / sqrt(head_dim), future keys masked) v; c_proj) and an
MLP of c_fc, GELU and c_proj (--gelu erf, PyTorch's default, or tanh,
GPT-2's own and PyTorch's gelu(approximate='tanh')). Every Linear stores its
weight as PyTorch does, [out, in], and applies it through a Transpose.

The nodes mirror what torch.onnx.export writes for the same model (see
../shared/data/tinygpt/tied_erf/model_train_opset17.txt), so trainc's
recognizer turns them into graph.layer_norm, graph.gelu, graph.attention
(causal) and graph.softmax_cross_entropy: LayerNormalization; the erf GELU
as Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5, the tanh one as
PyTorch exports it (../shared/data/tinygpt/untied_tanh: x + 0.044715 x^3,
times sqrt(2 / pi), Tanh, Add 1, Mul x, Mul 0.5); the mask as
Where(constant bool [1, 1, seq, seq], -inf, scores) before Softmax. Shapes
are static, so Reshape targets are Constant nodes rather than Shape
arithmetic.

Initializers are exactly the parameters, named like the PyTorch module
(wte.weight, h.0.attn.c_attn.bias, ln_f.weight, ...): trainc reports and
exports them under these names. Every constant that is not a parameter
(positions, the mask, reshape shapes) is a Constant node, since trainc
treats every initializer as trainable. Initial values: Linear and Embedding
weights ~ N(0, 0.02), biases 0, LayerNorm gamma 1 and beta 0, all f32, from
numpy's default_rng(--seed). With these the first loss is close to
ln(vocab).

Needs only numpy and onnx. Import build_model() to use it from Python.
"""
import argparse
import math
import os
import sys
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MIN_OPSET = 17  # LayerNormalization first appears in opset 17.
LN_EPS = 1e-5   # PyTorch nn.LayerNorm's default, as in the reference export.
INIT_STD = 0.02


@dataclass
class GptConfig:
    """Sizes of the model and of the one batch shape the graph is built for."""
    vocab: int = 256
    seq: int = 64
    batch: int = 8
    d_model: int = 128
    heads: int = 4
    layers: int = 2
    mlp_ratio: int = 4
    tied: bool = True
    # Training-mode Dropout on the embeddings and on each residual branch
    # (GPT-2's embd_pdrop and resid_pdrop; 0: no Dropout nodes).
    dropout: float = 0.0
    # 'erf' (exact) or 'tanh' (GPT-2's approximation).
    gelu: str = 'erf'
    seed: int = 0
    opset: int = 17


class _GraphBuilder:
    """Collects nodes, Constant nodes and initializers under unique names."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.initializers = []
        self.counts = {}

    def _name(self, scope, op_type):
        """A PyTorch-export-like node name: /h.0/attn/MatMul, then MatMul_1."""
        key = (scope, op_type)
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        return f'{scope}/{op_type}' + (f'_{n}' if n else '')

    def op(self, scope, op_type, inputs, num_outputs=1, **attrs):
        """Adds one node; returns its output name (or names)."""
        name = self._name(scope, op_type)
        outputs = [f'{name}_output_{i}' for i in range(num_outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))
        return outputs[0] if num_outputs == 1 else outputs

    def const(self, scope, value):
        """A Constant node holding `value` (a numpy array or scalar)."""
        tensor = numpy_helper.from_array(np.asarray(value))
        return self.op(scope, 'Constant', [], value=tensor)

    def param(self, name, shape, kind):
        """An f32 initializer: kind is 'normal', 'zeros' or 'ones'."""
        if kind == 'normal':
            value = self.rng.normal(0.0, INIT_STD, size=shape)
        elif kind == 'zeros':
            value = np.zeros(shape)
        else:
            value = np.ones(shape)
        self.initializers.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def linear(self, scope, x, name, d_in, d_out):
        """x @ W^T + b with W [d_out, d_in], as torch exports nn.Linear."""
        w = self.param(f'{name}.weight', (d_out, d_in), 'normal')
        b = self.param(f'{name}.bias', (d_out,), 'zeros')
        wt = self.op(scope, 'Transpose', [w], perm=[1, 0])
        y = self.op(scope, 'MatMul', [x, wt])
        return self.op(scope, 'Add', [b, y])

    def dropout(self, scope, x, ratio):
        """Training-mode Dropout of `x` (x itself when ratio is 0)."""
        if ratio == 0:
            return x
        return self.op(scope, 'Dropout', [x, self.const(scope, np.float32(ratio)),
                                          self.const(scope, np.bool_(True))])

    def layer_norm(self, scope, x, name, d):
        gamma = self.param(f'{name}.weight', (d,), 'ones')
        beta = self.param(f'{name}.bias', (d,), 'zeros')
        return self.op(scope, 'LayerNormalization', [x, gamma, beta],
                       axis=-1, epsilon=LN_EPS)


def _attention(g, cfg, x, i):
    """Causal multi-head self-attention of layer i on x [B, T, D]."""
    b, t, d, h = cfg.batch, cfg.seq, cfg.d_model, cfg.heads
    hd = d // h
    scope = f'/h.{i}/attn'
    qkv = g.linear(f'{scope}/c_attn', x, f'h.{i}.attn.c_attn', d, 3 * d)
    split = g.const(scope, np.array([d, d, d], dtype=np.int64))
    q, k, v = g.op(scope, 'Split', [qkv, split], num_outputs=3, axis=2)
    heads_shape = np.array([b, t, h, hd], dtype=np.int64)
    q = g.op(scope, 'Transpose',
             [g.op(scope, 'Reshape', [q, g.const(scope, heads_shape)])], perm=[0, 2, 1, 3])
    kt = g.op(scope, 'Transpose',
              [g.op(scope, 'Reshape', [k, g.const(scope, heads_shape)])], perm=[0, 2, 3, 1])
    v = g.op(scope, 'Transpose',
             [g.op(scope, 'Reshape', [v, g.const(scope, heads_shape)])], perm=[0, 2, 1, 3])
    scores = g.op(scope, 'MatMul', [q, kt])                      # [B, H, T, T]
    scores = g.op(scope, 'Mul', [scores, g.const(scope, np.float32(1.0 / math.sqrt(hd)))])
    # True above the diagonal: key j is in query i's future (j > i).
    future = np.triu(np.ones((t, t), dtype=bool), k=1).reshape(1, 1, t, t)
    scores = g.op(scope, 'Where', [g.const(scope, future),
                                   g.const(scope, np.float32(-np.inf)), scores])
    probs = g.op(scope, 'Softmax', [scores], axis=-1)
    y = g.op(scope, 'MatMul', [probs, v])                        # [B, H, T, hd]
    y = g.op(scope, 'Transpose', [y], perm=[0, 2, 1, 3])
    y = g.op(scope, 'Reshape', [y, g.const(scope, np.array([b, t, d], dtype=np.int64))])
    y = g.linear(f'{scope}/c_proj', y, f'h.{i}.attn.c_proj', d, d)
    return g.dropout(f'{scope}/resid_dropout', y, cfg.dropout)


def _mlp(g, cfg, x, i):
    """c_proj(gelu(c_fc(x))) of layer i, GELU in cfg.gelu's form."""
    d, hidden = cfg.d_model, cfg.mlp_ratio * cfg.d_model
    scope = f'/h.{i}/mlp'
    x = g.linear(f'{scope}/c_fc', x, f'h.{i}.mlp.c_fc', d, hidden)
    act = f'{scope}/act'
    if cfg.gelu == 'tanh':
        cube = g.op(act, 'Mul', [x, g.op(act, 'Mul', [x, x])])
        inner = g.op(act, 'Add', [x, g.op(act, 'Mul', [g.const(act, np.float32(0.044715)),
                                                       cube])])
        u = g.op(act, 'Mul', [g.const(act, np.float32(math.sqrt(2.0 / math.pi))), inner])
        t = g.op(act, 'Add', [g.const(act, np.float32(1.0)), g.op(act, 'Tanh', [u])])
        y = g.op(act, 'Mul', [g.const(act, np.float32(0.5)), g.op(act, 'Mul', [x, t])])
    else:
        e = g.op(act, 'Erf', [g.op(act, 'Div', [x, g.const(act, np.float32(math.sqrt(2.0)))])])
        y = g.op(act, 'Mul', [x, g.op(act, 'Add', [e, g.const(act, np.float32(1.0))])])
        y = g.op(act, 'Mul', [y, g.const(act, np.float32(0.5))])
    y = g.linear(f'{scope}/c_proj', y, f'h.{i}.mlp.c_proj', hidden, d)
    return g.dropout(f'{scope}/dropout', y, cfg.dropout)


def check_config(cfg):
    """Raises ValueError naming the first size that cannot work."""
    if not 0 <= cfg.dropout < 1:
        raise ValueError(f'dropout must be in [0, 1), got {cfg.dropout}')
    if cfg.gelu not in ('erf', 'tanh'):
        raise ValueError(f"gelu must be 'erf' or 'tanh', got {cfg.gelu!r}")
    for field in ('vocab', 'seq', 'batch', 'd_model', 'heads', 'layers', 'mlp_ratio'):
        if getattr(cfg, field) < 1:
            raise ValueError(f'{field} must be at least 1, got {getattr(cfg, field)}')
    if cfg.d_model % cfg.heads:
        raise ValueError(f'd_model {cfg.d_model} is not a multiple of heads {cfg.heads}')
    if not MIN_OPSET <= cfg.opset <= onnx.defs.onnx_opset_version():
        raise ValueError(f'opset must be in {MIN_OPSET}..{onnx.defs.onnx_opset_version()} '
                         f'(LayerNormalization needs {MIN_OPSET}), got {cfg.opset}')


def build_model(cfg):
    """Returns the checked onnx.ModelProto of the GPT `cfg` describes."""
    check_config(cfg)
    g = _GraphBuilder(np.random.default_rng(cfg.seed))
    b, t, d, v = cfg.batch, cfg.seq, cfg.d_model, cfg.vocab

    wte = g.param('wte.weight', (v, d), 'normal')
    wpe = g.param('wpe.weight', (t, d), 'normal')
    tok = g.op('/wte', 'Gather', [wte, 'tokens'])                # [B, T, D]
    pos = g.op('/wpe', 'Gather', [wpe, g.const('', np.arange(t, dtype=np.int64))])
    x = g.dropout('/drop', g.op('', 'Add', [tok, pos]), cfg.dropout)
    for i in range(cfg.layers):
        a = _attention(g, cfg, g.layer_norm(f'/h.{i}/ln_1', x, f'h.{i}.ln_1', d), i)
        x = g.op(f'/h.{i}', 'Add', [x, a])
        m = _mlp(g, cfg, g.layer_norm(f'/h.{i}/ln_2', x, f'h.{i}.ln_2', d), i)
        x = g.op(f'/h.{i}', 'Add', [x, m])
    x = g.layer_norm('/ln_f', x, 'ln_f', d)

    head = wte if cfg.tied else g.param('lm_head.weight', (v, d), 'normal')
    logits = g.op('/lm_head', 'MatMul', [x, g.op('/lm_head', 'Transpose', [head], perm=[1, 0])])
    flat_logits = g.op('', 'Reshape', [logits, g.const('', np.array([b * t, v], dtype=np.int64))])
    flat_targets = g.op('', 'Reshape', ['targets', g.const('', np.array([b * t], dtype=np.int64))])
    g.nodes.append(helper.make_node('SoftmaxCrossEntropyLoss', [flat_logits, flat_targets],
                                    ['loss'], name='/SoftmaxCrossEntropyLoss',
                                    reduction='mean'))

    graph = helper.make_graph(
        g.nodes, 'gpt',
        inputs=[helper.make_tensor_value_info('tokens', TensorProto.INT64, [b, t]),
                helper.make_tensor_value_info('targets', TensorProto.INT64, [b, t])],
        outputs=[helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
        initializer=g.initializers)
    opsets = [helper.make_opsetid('', cfg.opset)]
    # The oldest IR version that can carry the opset, not onnx's newest:
    # older runtimes (onnxruntime-training 1.19 reads IR <= 10) refuse newer.
    model = helper.make_model(graph, producer_name='trainc-make_gpt', opset_imports=opsets,
                              ir_version=helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model, full_check=True)
    return model


def write_model_and_batch(cfg, directory, tag='gpt', seed=0):
    """Saves the model as DIRECTORY/TAG.onnx and one batch of random tokens
    (targets: the tokens shifted by one) as TAG_tokens.npy and
    TAG_targets.npy; returns the model's path and trainc-run's --input
    arguments for the batch."""
    model = os.path.join(directory, f'{tag}.onnx')
    onnx.save(build_model(cfg), model)
    tokens = np.random.default_rng(seed).integers(0, cfg.vocab, size=(cfg.batch, cfg.seq))
    inputs = []
    for name, value in (('tokens', tokens), ('targets', np.roll(tokens, -1, axis=1))):
        path = os.path.join(directory, f'{tag}_{name}.npy')
        np.save(path, value)
        inputs += ['--input', f'{name}={path}']
    return model, inputs


def parameter_count(model):
    """Number of scalar parameters (elements of every initializer)."""
    return sum(int(np.prod(init.dims)) for init in model.graph.initializer)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description='Write a small GPT-2-style model as an ONNX training graph '
                    '(inputs tokens and targets, output the scalar mean cross-entropy loss) '
                    'for trainc --train.',
        epilog='Parameters are named like the PyTorch module (wte.weight, h.0.ln_1.weight, '
               'h.0.attn.c_attn.weight, ..., ln_f.bias) and initialized from numpy\'s '
               'default_rng(SEED): weights N(0, 0.02), biases 0, LayerNorm 1 and 0.')
    parser.add_argument('output', help='path of the .onnx file to write')
    parser.add_argument('--vocab', type=int, default=256,
                        help='vocabulary size V: token ids are in [0, V) (default: %(default)s)')
    parser.add_argument('--seq', type=int, default=64,
                        help='sequence length T, also the size of the positional embedding '
                             '(default: %(default)s)')
    parser.add_argument('--batch', type=int, default=8,
                        help='batch size B; the graph is built for inputs of exactly '
                             '[B, T] (default: %(default)s)')
    parser.add_argument('--d-model', type=int, default=128,
                        help='width D of the residual stream (default: %(default)s)')
    parser.add_argument('--heads', type=int, default=4,
                        help='attention heads; must divide D (default: %(default)s)')
    parser.add_argument('--layers', type=int, default=2,
                        help='transformer blocks (default: %(default)s)')
    parser.add_argument('--mlp-ratio', type=int, default=4,
                        help='MLP hidden width as a multiple of D (default: %(default)s)')
    tie = parser.add_mutually_exclusive_group()
    tie.add_argument('--tied', dest='tied', action='store_true', default=True,
                     help='the output projection is wte.weight transposed (default)')
    tie.add_argument('--untied', dest='tied', action='store_false',
                     help='the output projection is its own parameter, lm_head.weight [V, D]')
    parser.add_argument('--dropout', type=float, default=0.0,
                        help='training-mode Dropout probability on the embeddings and on '
                             'each attention and MLP output before the residual add '
                             '(GPT-2\'s embd_pdrop and resid_pdrop; default: %(default)s, '
                             'no Dropout nodes)')
    parser.add_argument('--gelu', choices=('erf', 'tanh'), default='erf',
                        help="the MLP's GELU: erf, exact (PyTorch's nn.GELU default), or "
                             "tanh, GPT-2's approximation (gelu(approximate='tanh')) "
                             '(default: %(default)s)')
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of the numpy generator that draws the initial weights '
                             '(default: %(default)s)')
    parser.add_argument('--opset', type=int, default=17,
                        help=f'ONNX opset to declare, {MIN_OPSET} or later (default: %(default)s)')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    cfg = GptConfig(vocab=args.vocab, seq=args.seq, batch=args.batch, d_model=args.d_model,
                    heads=args.heads, layers=args.layers, mlp_ratio=args.mlp_ratio,
                    tied=args.tied, dropout=args.dropout, gelu=args.gelu, seed=args.seed,
                    opset=args.opset)
    try:
        model = build_model(cfg)
    except ValueError as e:
        sys.exit(f'make_gpt.py: {e}')
    onnx.save(model, args.output)
    print(f'make_gpt: {parameter_count(model):,} parameters '
          f'({cfg.layers} layers, d_model {cfg.d_model}, {cfg.heads} heads, vocab {cfg.vocab}, '
          f'{"tied" if cfg.tied else "untied"}, {cfg.gelu} GELU; inputs [{cfg.batch}, {cfg.seq}], '
          f'opset {cfg.opset}) -> {args.output}')


if __name__ == '__main__':
    main()
