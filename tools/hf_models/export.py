#!/usr/bin/env python3
"""Export the Hugging Face model suite to ONNX and write PyTorch references.

    python -m venv /tmp/oracle && /tmp/oracle/bin/pip install -r tools/hf_models/requirements.txt
    /tmp/oracle/bin/python tools/hf_models/export.py test/Models/hf

With --legacy-suite, the models of models.LEGACY_CASES instead (DeBERTa-v2,
XLNet, CodeGen, GPT-Neo, ELECTRA, DistilBERT, MobileBERT, Whisper,
ConvNeXt, ResNet: test/Models/hf_legacy), exported by the PyTorch and transformers Debian can run
(`apt-get install python3-torch` gives PyTorch 1.13, which has only the
TorchScript exporter; then `/usr/bin/python3 -m venv --system-site-packages
/tmp/legacy && /tmp/legacy/bin/pip install transformers==4.46.3 onnx`).

For every model of models.py (GPT-2, Llama, Mistral, Qwen2, GPT-NeoX,
GPT-J, Falcon, Phi-3, Qwen3, OPT, Gemma, BERT with and without token types,
RoBERTa, BART, T5, ViT; tiny
random configs, seed 0) this writes to
OUT/<model>/:

- ts14.onnx, ts17.onnx: torch.onnx.export's TorchScript exporter
  (dynamo=False) at opsets 14 and 17, training mode, no constant folding;
- dynamo.onnx: the dynamo exporter (torch's default) at its default opset,
  no constant folding and no onnxscript optimization; each node's debug
  metadata (its Python stack trace, FX node text, module path: 80% of the
  file) is dropped, to keep the suite small enough to travel to a GPU
  machine; the value_info metadata that marks buffers stays;
- <input>.npy: the batch, one file per graph input;
- reference.npz: PyTorch's loss and every parameter's gradient on that
  batch in float32 and float64 (keys loss_f32, grad_f32/<param>, ...), and
  the loss of each of 11 AdamW steps on the same batch (lr 1e-3, betas
  0.9/0.999, eps 1e-8, weight decay 0.01 on every parameter: torch's
  AdamW defaults) in float32 (adamw_losses_f32) and float64, and, for a
  model with batch norms, their running statistics after those steps
  (running_f64/<module>.running_mean, .running_var; the variance as
  ONNX's BatchNormalization blends it, the population variance, where
  PyTorch blends the unbiased one).

and OUT/summary.json: library versions, parameter counts, each export's
opset and node count, or the exporter's error when PyTorch cannot export a
model (the test reports such a case; it does not pass it).

Parameters are named as torch names them in the wrapper (model.<path>).
A tied parameter has several names and the exporters pick different ones
(the TorchScript exporter the first, the dynamo exporter the last):
summary.json's 'aliases' maps each other name to the one the references
use. 'buffers' lists the model's persistent buffers (BART's
final_logits_bias): PyTorch does not train them, so the test freezes those
an export writes as initializers, as a user would (trainc --freeze).
'padding_idx' maps each Embedding(padding_idx=row) table to its row,
which both exporters drop and the test gives trainc
(--embedding-padding-index) under the name the export uses.
"""
import argparse
import inspect
import json
import os
import sys
import traceback
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

ADAMW_STEPS = 11
EXPORTERS = ('ts14', 'ts17', 'dynamo')


def output_directory(doc, default):
    """The output directory an export script (`doc`, its docstring) is given
    on its command line (`default`: the test directory it writes), with the
    exporters' and transformers' warnings silenced."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument('out', help=f'output directory ({default})')
    args = parser.parse_args()
    warnings.filterwarnings('ignore')
    transformers.logging.set_verbosity_error()
    return args.out


def build(case, dtype):
    torch.manual_seed(0)
    model = case.build().to(dtype)
    model.train()
    return models.LossOf(model, case.inputs)


def batch_args(case, batch, dtype):
    return tuple(batch[k].to(dtype) if batch[k].is_floating_point() else batch[k]
                 for k in case.inputs)


def gradients(case, batch, dtype):
    wrapper = build(case, dtype)
    loss = wrapper(*batch_args(case, batch, dtype))
    loss.backward()
    # Frozen parameters (requires_grad False: Whisper's sinusoidal
    # positions) are not trained, so they have no reference gradient.
    grads = {name: p.grad.detach().numpy().copy() if p.grad is not None
             else np.zeros(tuple(p.shape), dtype=p.detach().numpy().dtype)
             for name, p in wrapper.named_parameters() if p.requires_grad}
    return float(loss), grads


def track_onnx_running_var(wrapper):
    """ONNX's BatchNormalization (training mode) blends each batch's
    population variance into running_var; PyTorch's BatchNorm blends the
    unbiased one (n / (n - 1) times larger). Hooks keep ONNX's alongside,
    from the same batches: returns {module name: running_var}, filled as
    the model runs."""
    tracked = {}

    def hook(name):
        def before(module, inputs):
            x = inputs[0].detach()
            var = x.var(dim=[0, *range(2, x.dim())], unbiased=False)
            prev = tracked.get(name, module.running_var.detach().clone())
            tracked[name] = prev * (1 - module.momentum) + var * module.momentum
        return before

    for name, module in wrapper.named_modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and module.training:
            module.register_forward_pre_hook(hook(name))
    return tracked


def adamw_curve(case, batch, dtype):
    """The loss of each AdamW step, and the running statistics of every
    batch norm after the last ({buffer name: value}; running_var as ONNX
    defines it, see track_onnx_running_var)."""
    wrapper = build(case, dtype)
    opt = torch.optim.AdamW(wrapper.parameters(), lr=1e-3, betas=(0.9, 0.999),
                            eps=1e-8, weight_decay=0.01)
    onnx_vars = track_onnx_running_var(wrapper)
    losses = []
    args = batch_args(case, batch, dtype)
    for _ in range(ADAMW_STEPS):
        opt.zero_grad()
        loss = wrapper(*args)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    running = {}
    for name, module in wrapper.named_modules():
        if name in onnx_vars:
            running[f'{name}.running_mean'] = module.running_mean.detach().numpy().copy()
            running[f'{name}.running_var'] = onnx_vars[name].numpy().copy()
    return losses, running


def strip_node_metadata(path):
    """Drops the nodes' metadata_props (debug provenance only) from the
    model at `path`."""
    model = onnx.load(path)
    for node in model.graph.node:
        del node.metadata_props[:]
    onnx.save(model, path)


# torch.onnx.export before 2.x (Debian's 1.13) has no dynamo exporter and
# no `dynamo` argument.
HAS_DYNAMO = 'dynamo' in inspect.signature(torch.onnx.export).parameters


def named_parameters_with_aliases(wrapper):
    """Every (name, parameter) pair, a tied parameter under each of its
    names (named_parameters(remove_duplicate=False), which PyTorch 1.13
    lacks)."""
    for module_name, module in wrapper.named_modules(remove_duplicate=False):
        for name, p in module._parameters.items():
            if p is not None:
                yield (f'{module_name}.{name}' if module_name else name), p


def export(case, batch, exporter, path):
    wrapper = build(case, torch.float32)
    before = {n: b.detach().clone() for n, b in wrapper.named_buffers()}
    args = batch_args(case, batch, torch.float32)
    names = list(case.inputs)
    if exporter == 'dynamo' and not HAS_DYNAMO:
        raise RuntimeError(f'PyTorch {torch.__version__} has no dynamo exporter')
    legacy = {} if not HAS_DYNAMO else {'dynamo': False}
    if exporter == 'dynamo':
        torch.onnx.export(wrapper, args, path, dynamo=True, input_names=names,
                          output_names=['loss'], do_constant_folding=False,
                          optimize=False, external_data=False, verbose=False)
        strip_node_metadata(path)
    else:
        torch.onnx.export(wrapper, args, path, **legacy,
                          opset_version=int(exporter[2:]),
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=names,
                          output_names=['loss'])
    # A file onnxruntime refuses is the exporter's failure, recorded as
    # such (the TorchScript exporter writes Mamba's tensor_split with Tile
    # repeats of rank 2), not a model for trainc to pass.
    import onnxruntime
    try:
        onnxruntime.InferenceSession(path, providers=['CPUExecutionProvider'])
    except Exception as e:
        raise RuntimeError('the exporter wrote a file onnxruntime refuses: ' +
                           str(e).splitlines()[0][:200]) from e
    model = onnx.load(path)
    # Exporting in training mode runs the forward once, which updates the
    # batch norms' running statistics before the exporter writes them: the
    # file gets the buffers as they were before it, so that it holds the
    # model the references start from.
    if restore_buffers(model, before):
        onnx.save(model, path)
    return {'opset': model.opset_import[0].version, 'nodes': len(model.graph.node),
            'initializers': len(model.graph.initializer)}


def write_first_step_references(out, cases, batch):
    """Exports each (case, exporters) of `cases` by each of its exporters to
    OUT/<case>_<exporter>.onnx and writes OUT/reference.json: PyTorch's loss
    and gradient norm of each export's model in float64 on `batch`, which
    test/Frontends/Onnx/check_first_step.py compares with trainc's first
    step (export_causal.py, export_padding.py)."""
    reference = {}
    for case, exporters in cases:
        loss, grads = gradients(case, batch, torch.float64)
        norm = float(np.sqrt(sum(float(np.sum(g ** 2)) for g in grads.values())))
        for exporter in exporters:
            name = f'{case.name}_{exporter}'
            info = export(case, batch, exporter, os.path.join(out, f'{name}.onnx'))
            reference[name] = {'loss': loss, 'grad_norm': norm}
            print(name, info, reference[name])
    with open(os.path.join(out, 'reference.json'), 'w') as f:
        json.dump(reference, f, indent=1, sort_keys=True)
        f.write('\n')


def restore_buffers(model, buffers):
    """Sets each initializer of `model` named as a buffer in `buffers`
    ({name: tensor}) to that tensor's value; whether any changed."""
    changed = False
    for init in model.graph.initializer:
        if init.name in buffers:
            value = buffers[init.name].numpy()
            if not np.array_equal(onnx.numpy_helper.to_array(init), value):
                init.CopyFrom(onnx.numpy_helper.from_array(value.astype(
                    onnx.numpy_helper.to_array(init).dtype), init.name))
                changed = True
    return changed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out', help='output directory (test/Models/hf)')
    parser.add_argument('--models', nargs='*', help='only these models')
    parser.add_argument('--legacy-suite', action='store_true',
                        help="export models.LEGACY_CASES (test/Models/hf_legacy) instead "
                             "of models.CASES")
    parser.add_argument('--xz', action='store_true',
                        help='store each export xz-compressed (NAME.onnx.xz, which '
                             "test/Models/hf_models.py unpacks): the device tool's copy "
                             'of the working tree is limited (tools/gpu/bundle.sh)')
    parser.add_argument('--vocab', type=int, default=models.VOCAB,
                        help='the vocabulary of the models that have one (default '
                             f"{models.VOCAB}; test/Models/hf_vocab1001's GPT-2 is --vocab 1001)")
    args = parser.parse_args()
    models.VOCAB = args.vocab
    warnings.filterwarnings('ignore')
    transformers.logging.set_verbosity_error()
    versions = {'torch': torch.__version__, 'transformers': transformers.__version__,
                'onnx': onnx.__version__}
    try:
        import onnxscript
        versions['onnxscript'] = onnxscript.__version__
    except ImportError:
        pass
    summary = {**versions, 'models': {}}
    summary_path = os.path.join(args.out, 'summary.json')
    if args.models and os.path.exists(summary_path):
        # Some models again: the others keep their files, and the summary
        # its versions (the ones these are made with go in each model's
        # entry) and its other keys (autocast_reference.py's).
        summary = json.load(open(summary_path))
    for case in models.LEGACY_CASES if args.legacy_suite else models.CASES:
        if args.models and case.name not in args.models:
            continue
        out = os.path.join(args.out, case.name)
        os.makedirs(out, exist_ok=True)
        batch = case.make_batch(torch.Generator().manual_seed(1))
        for name in case.inputs:
            np.save(os.path.join(out, f'{name}.npy'), batch[name].numpy())
        ref = {}
        for dtype, tag in ((torch.float32, 'f32'), (torch.float64, 'f64')):
            loss, grads = gradients(case, batch, dtype)
            ref[f'loss_{tag}'] = np.array(loss)
            for name, g in grads.items():
                ref[f'grad_{tag}/{name}'] = g
            losses, running = adamw_curve(case, batch, dtype)
            ref[f'adamw_losses_{tag}'] = np.array(losses)
            for name, value in running.items():
                ref[f'running_{tag}/{name}'] = value
        np.savez_compressed(os.path.join(out, 'reference.npz'), **ref)
        wrapper = build(case, torch.float32)
        canonical = {id(p): n for n, p in wrapper.named_parameters()}
        aliases = {n: canonical[id(p)]
                   for n, p in named_parameters_with_aliases(wrapper)
                   if canonical[id(p)] != n}
        info = {'parameters': sum(p.numel() for p in wrapper.parameters()),
                'aliases': aliases,
                # Persistent buffers: an exporter may write them as
                # initializers, which trainc would train unless frozen.
                'buffers': sorted(n for n, _ in wrapper.named_buffers()
                                  if n.rsplit('.', 1)[-1] not in
                                  wrapper.get_submodule(n.rpartition('.')[0])
                                  ._non_persistent_buffers_set),
                # Parameters PyTorch does not train: the test freezes them.
                'frozen': sorted(n for n, p in wrapper.named_parameters()
                                 if not p.requires_grad),
                # Embedding(padding_idx=row) tables, whose padding row gets
                # no gradient in PyTorch; the exporters drop it, and the
                # test tells trainc (--embedding-padding-index).
                'padding_idx': {canonical[id(m.weight)]: m.padding_idx
                                for m in wrapper.modules()
                                if isinstance(m, torch.nn.Embedding)
                                and m.padding_idx is not None},
                'inputs': list(case.inputs), 'composites': list(case.composites),
                **({'versions': versions}
                   if any(summary.get(k) != v for k, v in versions.items()) else {}),
                'loss_f32': float(ref['loss_f32']), 'exports': {}}
        for exporter in EXPORTERS:
            path = os.path.join(out, f'{exporter}.onnx')
            # No file of an earlier export may outlive this one (a stale
            # .onnx.xz would be tested in place of a failure).
            for stale in (path, path + '.xz'):
                if os.path.exists(stale):
                    os.remove(stale)
            try:
                info['exports'][exporter] = export(case, batch, exporter, path)
                if args.xz:
                    import lzma
                    with open(path, 'rb') as f, lzma.open(path + '.xz', 'wb', preset=9) as g:
                        g.write(f.read())
                    os.remove(path)
            except Exception as e:  # the exporter's own failure, recorded
                cause = e
                while cause.__cause__ is not None:
                    cause = cause.__cause__
                info['exports'][exporter] = {
                    'error': f'{type(cause).__name__}: {str(cause).splitlines()[0][:300]}'}
                if os.path.exists(path):
                    os.remove(path)
                traceback.print_exc(limit=1)
        summary['models'][case.name] = info
        print(f"{case.name}: {info['parameters']} parameters, loss {info['loss_f32']:.6f}; " +
              ', '.join(f"{k} {'opset ' + str(v['opset']) if 'opset' in v else 'FAILED'}"
                        for k, v in info['exports'].items()), flush=True)
    with open(summary_path, 'w') as f:
        json.dump(summary, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
