#!/usr/bin/env python3
"""Export the JAX GPT of test/Models/jax_models.py as ONNX from an equivalent PyTorch module.

    /work/oracle-venv/bin/python tools/jax_models_torch_export.py \\
        [--jax-python build/venv/bin/python] [--out test/Models/jax]

Run with a Python that has torch, onnx, onnxruntime, numpy and safetensors
(the oracle venv); JAX is used only through --jax-python (the project venv),
which runs tools/jax_export.py's export() on jax_models.GPT with the seeds
test/Models/jax_training.py uses (params from jax.random.key(0), batch from
jax.random.key(1)) and JAX's float32 loss on that batch. The PyTorch module
(TorchGPT below) loads exactly those parameters from the safetensors file
export() wrote, so the two models compute the same function with the same
weights. It writes to OUT:

  gpt.onnx         torch.onnx.export's TorchScript exporter (dynamo=False),
                   opset 17, training mode, do_constant_folding=False; inputs
                   `tokens` and `targets` (int64 [2, 16]), one output `loss`
                   (the mean softmax cross-entropy over all batch * seq
                   tokens, in the graph as SoftmaxCrossEntropyLoss);
  gpt.batch.npz    the batch it was exported and checked with: `tokens` and
                   `targets`, int64 (the values of JAX's int32 batch);
  gpt_torch.json   PyTorch's float32 loss on that batch, onnxruntime's loss
                   of gpt.onnx, JAX's float32 loss, the versions, and the
                   parameter count.

It exits 1 unless PyTorch's and onnxruntime's losses are within 1e-5
relative of JAX's float32 loss (float32 round-off of a sum of a few
thousand terms is ~1e-6).

The module mirrors jax_models.GPT op for op (test/Models/jax_onnx_parity.py
checks that trainc compiles both exports to the same composites):

  * parameters have the JAX shapes and are applied as `x @ w + b` (no
    nn.Linear, whose weight is [out, in]), named like the JAX tree with
    dots: wte, wpe, blocks.0.ln1.scale, blocks.0.attn.wqkv, ..., lm_head;
  * LayerNorm is F.layer_norm (eps 1e-5) -> ONNX LayerNormalization;
  * attention is explicit: one fused qkv projection split in three,
    q @ k^T / sqrt(head_dim), torch.where(causal, scores, -inf) with a
    constant boolean lower-triangular mask (a bool buffer, which trainc
    reads as a constant, not a parameter), softmax, @ v, output projection;
  * GELU is the tanh approximation (F.gelu(approximate='tanh'), jax.nn.gelu's
    default), written by opset 17 as its formula;
  * the loss is F.cross_entropy over [batch * seq, vocab] logits.

The ONNX file is 134 KiB (30,080 float32 parameters) and is committed with
the batch and the JSON; CI needs neither PyTorch nor this script.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import onnxruntime
import safetensors.numpy
import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RTOL = 1e-5

# Run by --jax-python: export jax_models.GPT as jax_training.py does and print
# JAX's float32 loss and the GPT's sizes as JSON.
JAX_SNIPPET = r'''
import json, sys
sys.path.insert(0, sys.argv[1] + '/tools'); sys.path.insert(0, sys.argv[1] + '/test/Models')
import jax, jax_export, jax_models
GPT = jax_models.GPT
params = GPT.init_params(jax.random.key(0))
batch = GPT.example_batch(jax.random.key(1))
r = jax_export.export(GPT.loss_fn, params, batch, sys.argv[2], save_batch=True)
print(json.dumps({'loss_f32': float(jax.jit(GPT.loss_fn)(params, batch)),
                  'jax': jax.__version__, 'files': r.input_files,
                  'safetensors': r.safetensors_path,
                  'config': {k: getattr(GPT, k) for k in
                             ('VOCAB', 'D_MODEL', 'HEADS', 'LAYERS', 'SEQ', 'BATCH', 'LN_EPS')}}))
'''


class LayerNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x, eps):
        return F.layer_norm(x, (x.shape[-1],), self.scale, self.bias, eps)


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.wqkv = nn.Parameter(torch.zeros(d, 3 * d))
        self.bqkv = nn.Parameter(torch.zeros(3 * d))
        self.wo = nn.Parameter(torch.zeros(d, d))
        self.bo = nn.Parameter(torch.zeros(d))


class Mlp(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w1 = nn.Parameter(torch.zeros(d, 4 * d))
        self.b1 = nn.Parameter(torch.zeros(4 * d))
        self.w2 = nn.Parameter(torch.zeros(4 * d, d))
        self.b2 = nn.Parameter(torch.zeros(d))


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln1, self.attn, self.ln2, self.mlp = LayerNorm(d), Attention(d), LayerNorm(d), Mlp(d)


class TorchGPT(nn.Module):
    """jax_models.GPT in PyTorch: same parameters (shapes, names with dots), same ops."""

    def __init__(self, cfg):
        super().__init__()
        d, v, s = cfg['D_MODEL'], cfg['VOCAB'], cfg['SEQ']
        self.heads, self.eps = cfg['HEADS'], cfg['LN_EPS']
        self.wte = nn.Parameter(torch.zeros(v, d))
        self.wpe = nn.Parameter(torch.zeros(s, d))
        self.blocks = nn.ModuleList(Block(d) for _ in range(cfg['LAYERS']))
        self.ln_f = LayerNorm(d)
        self.lm_head = nn.Parameter(torch.zeros(d, v))
        self.register_buffer('causal', torch.tril(torch.ones(s, s, dtype=torch.bool)),
                             persistent=False)

    def attention(self, x, p):
        b, s, d = x.shape
        h = self.heads
        q, k, v = (x @ p.wqkv + p.bqkv).split(d, dim=-1)

        def heads(t):  # [b, s, d] -> [b, h, s, d/h]
            return t.reshape(b, s, h, d // h).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)
        scores = torch.where(self.causal[:s, :s], scores, float('-inf'))
        out = torch.softmax(scores, dim=-1) @ v
        out = out.transpose(1, 2).reshape(b, s, d)
        return out @ p.wo + p.bo

    @staticmethod
    def mlp(x, p):
        return F.gelu(x @ p.w1 + p.b1, approximate='tanh') @ p.w2 + p.b2

    def forward(self, tokens, targets):
        s = tokens.shape[1]
        x = self.wte[tokens] + self.wpe[torch.arange(s)]
        for blk in self.blocks:
            x = x + self.attention(blk.ln1(x, self.eps), blk.attn)
            x = x + self.mlp(blk.ln2(x, self.eps), blk.mlp)
        logits = self.ln_f(x, self.eps) @ self.lm_head
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def jax_name(torch_name):
    """blocks.0.attn.wqkv -> params['blocks'][0]['attn']['wqkv'] (tools/jax_export.py's names)."""
    parts = ''.join(f'[{p}]' if p.isdigit() else f"['{p}']" for p in torch_name.split('.'))
    return 'params' + parts


def rel(a, b):
    return abs(a - b) / abs(b)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--jax-python', default=os.path.join(ROOT, 'build', 'venv', 'bin', 'python'),
                        help='a Python with jax (default: the project venv build/venv/bin/python)')
    parser.add_argument('--out', default=os.path.join(ROOT, 'test', 'Models', 'jax'),
                        help='output directory (default test/Models/jax)')
    args = parser.parse_args()
    warnings.filterwarnings('ignore')  # the TorchScript exporter's deprecation and tracer warnings
    os.makedirs(args.out, exist_ok=True)

    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([args.jax_python, '-c', JAX_SNIPPET, ROOT, os.path.join(tmp, 'gpt')],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f'JAX export failed:\n{proc.stderr}')
        ref = json.loads(proc.stdout.strip().splitlines()[-1])
        weights = safetensors.numpy.load_file(ref['safetensors'])
        batch = {k: np.load(ref['files'][f"batch['{k}']"]).astype(np.int64)
                 for k in ('tokens', 'targets')}

    torch.manual_seed(0)
    model = TorchGPT(ref['config'])
    state = {n: torch.from_numpy(weights[jax_name(n)]) for n, _ in model.named_parameters()}
    if len(state) != len(weights):
        sys.exit(f'{len(state)} PyTorch parameters, {len(weights)} JAX parameters')
    for n, p in model.named_parameters():
        if tuple(p.shape) != state[n].shape:
            sys.exit(f'{n}: PyTorch shape {tuple(p.shape)}, JAX {tuple(state[n].shape)}')
    model.load_state_dict(state, strict=False)  # the causal mask is a non-persistent buffer
    model.train()
    args_t = (torch.from_numpy(batch['tokens']), torch.from_numpy(batch['targets']))
    with torch.no_grad():
        torch_loss = float(model(*args_t))

    onnx_path = os.path.join(args.out, 'gpt.onnx')
    torch.onnx.export(model, args_t, onnx_path, dynamo=False, opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=['tokens', 'targets'], output_names=['loss'])
    np.savez(os.path.join(args.out, 'gpt.batch.npz'), **batch)
    m = onnx.load(onnx_path)
    float_inits = [i for i in m.graph.initializer if i.data_type == onnx.TensorProto.FLOAT]
    n_values = sum(int(np.prod(i.dims)) for i in float_inits)
    sess = onnxruntime.InferenceSession(onnx_path, providers=['CPUExecutionProvider'])
    ort_loss = float(sess.run(['loss'], batch)[0])

    summary = {
        'torch': torch.__version__, 'onnx': onnx.__version__,
        'onnxruntime': onnxruntime.__version__, 'jax': ref['jax'],
        'exporter': 'torchscript', 'opset': 17, 'nodes': len(m.graph.node),
        'parameters': len(float_inits), 'parameter_values': n_values,
        'params_seed': 0, 'batch_seed': 1,
        'loss_torch_f32': torch_loss, 'loss_onnxruntime_f32': ort_loss,
        'loss_jax_f32': ref['loss_f32'],
    }
    with open(os.path.join(args.out, 'gpt_torch.json'), 'w') as f:
        json.dump(summary, f, indent=2)
        f.write('\n')
    ops = {}
    for node in m.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    print(f'{onnx_path}: {len(m.graph.node)} nodes, {len(float_inits)} parameters '
          f'({n_values} values), {os.path.getsize(onnx_path)} bytes')
    print('  ops: ' + ', '.join(f'{k} {v}' for k, v in sorted(ops.items())))
    print(f"loss: JAX f32 {ref['loss_f32']:.8f}  PyTorch f32 {torch_loss:.8f} "
          f"(rel {rel(torch_loss, ref['loss_f32']):.1e})  onnxruntime {ort_loss:.8f} "
          f"(rel {rel(ort_loss, ref['loss_f32']):.1e})")
    bad = [n for n, v in (('PyTorch', torch_loss), ('onnxruntime', ort_loss))
           if rel(v, ref['loss_f32']) > RTOL]
    if bad:
        print(f"MISMATCH: {', '.join(bad)} loss off JAX's by more than {RTOL} relative")
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
