"""The PyTorch bridge: train a torch.nn.Module with trainc.

    import trainc.torch
    trainer = trainc.torch.compile_training(
        model, lambda m, batch: m(**batch).loss, example_batch,
        optimizer='adamw', lr=1e-3)
    for batch in batches:               # dicts like example_batch
        metrics = trainer.step(batch)
    trainer.sync_to(model)              # the trained weights, into the module

The module and the loss are exported together with torch.onnx (by default
the TorchScript exporter, opset 17, in training mode, the loss in the
graph; `exporter='dynamo'` takes torch.export's, which PyTorch made its
default in 2.9 when it deprecated the other, with batch norms written in
training mode by the bridge), so trainc trains exactly
what `loss_fn(module, batch)` computes; the
module's buffers are frozen (not trained), its parameters trained under
their names in `module.named_parameters()`. The batch must be a dict of
tensors (give attention masks explicitly: the exporter fixes shapes and
cannot see default arguments computed from data). An op trainc cannot
compile is reported with the module path the exporter recorded for it.
Batch norms' running variances blend the batch's unbiased variance, as
PyTorch's BatchNorm does (trainc's --unbiased-running-var; the ONNX
definition, for other files, is the population variance).
scaled_dot_product_attention's dropout_p drops out in the training step
as in PyTorch (trainc's --train-modeless-dropout: both exporters write it
as a Dropout that ONNX defines as the identity), unless the step is
compiled with eval_mode=True.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import tempfile
from typing import Any, Callable, Dict, Mapping

import torch

from . import CompileError, Executable, compile as _compile
from ._bridge import BridgeTrainer

__all__ = ['TorchTrainer', 'compile_training']

# The exporter names parameters by their path under the wrapper below.
_PREFIX = 'module.'


class _LossModule(torch.nn.Module):
    """module + loss_fn as one module whose output is the loss."""

    def __init__(self, module: torch.nn.Module, loss_fn: Callable,
                 names: list):
        super().__init__()
        self.module = module
        self.loss_fn = loss_fn
        self.names = names

    def forward(self, *tensors):
        return self.loss_fn(self.module, dict(zip(self.names, tensors)))


def _scoped_paths(message: str, model) -> str:
    """trainc's error with the module path of the node it names by index
    (node #12), from the dynamo exporter's name scopes of that node
    (['', 'module', 'module.encoder', 'module.encoder.0', 'linalg_det']:
    the modules' paths, then the op)."""
    def add_path(match):
        index = int(match.group(1))
        if index >= len(model.graph.node):
            return match.group(0)
        scopes = next((p.value for p in model.graph.node[index].metadata_props
                       if p.key == 'pkg.torch.onnx.name_scopes'), None)
        try:
            parts = [s for s in ast.literal_eval(scopes)[:-1] if s] if scopes else None
        except (ValueError, SyntaxError):
            parts = None
        if parts is None:
            return match.group(0)
        path = parts[-1] if parts else ''
        # _LossModule's attribute: the user's module is under 'module'.
        path = '' if path == 'module' else path.removeprefix(_PREFIX)
        return f"{match.group(0)} [module {path or '(the top module)'}]"
    return re.sub(r"node #(\d+) '[^']*'", add_path, message)


def _module_paths(message: str) -> str:
    """trainc's error with the module path of each ONNX node it names
    (the TorchScript exporter names nodes /h.0/attn/MatMul)."""
    def add_path(match):
        scope = [s for s in match.group(1).strip('/').split('/')[:-1] if s]
        if scope and scope[0] == 'module':  # _LossModule's attribute
            scope = scope[1:]
        # Scopes repeat their parent's name for list items: encoder, encoder.0.
        path, last = '', ''
        for part in scope:
            if last and part.startswith(last + '.'):
                path = path[:len(path) - len(last)] + part
            else:
                path = f'{path}.{part}' if path else part
            last = part
        return f"{match.group(0)} [module {path or '(the top module)'}]"
    return re.sub(r"'(/[^']*)'", add_path, message)


class TorchTrainer(BridgeTrainer):
    """A trainer of a torch module: `step(batch)` and `evaluate(batch)`
    take a dict like the example batch (tensors or arrays);
    `sync_to(module)` copies the trained parameters into a module of the
    same structure."""

    def __init__(self, executable: Executable, names: list, workdir: str):
        super().__init__(executable, workdir)
        self._names = names

    def _inputs(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        inputs = {}
        for name in self._names:
            if name not in batch:
                raise KeyError(f"the batch has no '{name}' (inputs: "
                               f'{self._names})')
            value = batch[name]
            if isinstance(value, torch.Tensor):
                # Through DLPack: no copy for a contiguous CPU tensor.
                value = value.detach().cpu()
            inputs[name] = value
        return inputs

    def _compile_forward(self) -> Executable:
        # As module.eval() runs it: Dropout off, batch norms on their
        # running statistics (the export is in training mode).
        return _compile(os.path.join(self._workdir, 'model.onnx'),
                        os.path.join(self._workdir, 'forward.tcx'),
                        eval_mode=True)

    def state_dict(self) -> Dict[str, torch.Tensor]:
        """The trained parameters, by their names in the module."""
        return {name[len(_PREFIX):] if name.startswith(_PREFIX) else name:
                torch.from_numpy(value)
                for name, value in self.trainer.state_dict().items()}

    def sync_to(self, module: torch.nn.Module) -> None:
        """Copies the trained parameters into `module`'s parameters, and
        the buffers trainc kept (batch norms' running statistics, which the
        training steps update) into its buffers; each must exist in it with
        the same shape. (A batch norm's num_batches_tracked is not
        counted: it matters only with momentum None.)"""
        # Every name of a tied parameter: the exporters name it by different
        # ones (the TorchScript exporter the first, torch.export the last).
        params = {**dict(module.named_buffers(remove_duplicate=False)),
                  **dict(module.named_parameters(remove_duplicate=False))}
        written = {}
        for name, value in self.state_dict().items():
            if name not in params:
                raise KeyError(f"the module has no parameter or buffer '{name}'")
            # Two trained tensors into one (names of one tied tensor, which
            # an export kept apart) would keep whichever came last.
            other = written.setdefault(id(params[name]), name)
            if other != name:
                raise ValueError(f"'{name}' and '{other}' are one tensor in the "
                                 "module but were trained as two")
            if tuple(params[name].shape) != tuple(value.shape):
                raise ValueError(f"'{name}' is {tuple(params[name].shape)} in "
                                 f'the module, {tuple(value.shape)} trained')
            with torch.no_grad():
                params[name].copy_(value.to(params[name].dtype))


def _padding_rows(module: torch.nn.Module, graph) -> list:
    """'NAME=ROW' for each Embedding(padding_idx=ROW) table that the
    exported `graph` looks up (a Gather on axis 0 of it), NAME the
    initializer the export holds it as (a tied table has several names,
    of which the exporter keeps one). trainc applies the row to every
    lookup of the table: a table that an Embedding without padding_idx
    also looks up, or one with another row, is refused."""
    import onnx
    rows = {}
    for m in module.modules():
        if isinstance(m, torch.nn.Embedding):
            rows.setdefault(id(m.weight), set()).add(m.padding_idx)
    tables = {i.name: len(i.dims) for i in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}

    def source(value):
        """The initializer a Gather's data comes from through Identity,
        Cast and Reshape, and whether it is the Gather's own input."""
        direct = True
        while value not in tables and value in producer and \
                producer[value].op_type in ('Identity', 'Cast', 'Reshape'):
            value, direct = producer[value].input[0], False
        return value, direct

    looked_up, indirect = set(), set()
    for node in graph.node:
        if node.op_type != 'Gather':
            continue
        table, direct = source(node.input[0])
        if table not in tables:
            continue
        axis = next((onnx.helper.get_attribute_value(a) for a in node.attribute
                     if a.name == 'axis'), 0)
        (looked_up if direct and axis % max(tables[table], 1) == 0 else indirect).add(table)
    flags = set()
    for n, p in module.named_parameters(remove_duplicate=False):
        name = _PREFIX + n
        if id(p) not in rows or rows[id(p)] == {None}:
            continue
        if name in indirect:
            raise ValueError(
                f"embedding table '{n}' has a padding_idx, but the export "
                "looks it up other than by a Gather of it on axis 0, so trainc "
                "cannot keep its padding row from the gradient")
        if name not in looked_up:
            continue  # (a table only a tied head reads keeps its gradient)
        if len(rows[id(p)]) > 1:
            raise ValueError(
                f"embedding table '{n}' is looked up by Embeddings with "
                f"padding_idx {sorted(rows[id(p)], key=str)}: trainc keeps one "
                "padding row of a table from every lookup's gradient")
        flags.add(f'{_PREFIX}{n}={next(iter(rows[id(p)]))}')
    return sorted(flags)


def _check_norms(module: torch.nn.Module, exporter: str) -> None:
    """Refuses the norms whose training no exporter writes as PyTorch
    runs it: a batch norm's cumulative average (momentum=None: torch.export
    cannot trace it, and the TorchScript exporter writes a fixed momentum)
    and, with torch.export's, an instance norm's running statistics (whose
    updates it drops)."""
    # (A module in eval mode is exported whole in training mode.)
    whole = not module.training
    for name, m in module.named_modules():
        name = name or '(the top module)'
        trains = whole or m.training
        if (isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and trains
                and m.track_running_stats and m.momentum is None):
            raise ValueError(
                f"batch norm '{name}' has momentum=None (a cumulative "
                "average of the batches), which no ONNX exporter writes as "
                "PyTorch runs it: give it a momentum")
        if exporter != 'dynamo':
            continue
        if (isinstance(m, torch.nn.modules.instancenorm._InstanceNorm) and trains
                and m.track_running_stats):
            raise ValueError(
                f"exporter='dynamo' drops the running statistics' updates of "
                f"instance norm '{name}' (track_running_stats=True): use "
                "exporter='torchscript'")


def _check_dynamo_batch_norms(exported, training_norms) -> None:
    """Every training-mode batch norm of the exported program must be a
    training-mode BatchNormalization node (else the bridge's translation
    was not used, and the step would normalize by running statistics).
    Where the program cannot be counted, an inference-mode node must be
    one without running statistics (track_running_stats=False: its mean
    and variance are computed from the batch), not one reading
    initializers (which a batch norm in eval mode also is)."""
    import onnx
    initializers = {i.name for i in exported.graph.initializer}
    training = 0
    for node in exported.graph.node:
        if node.op_type != 'BatchNormalization':
            continue
        mode = next((onnx.helper.get_attribute_value(a)
                     for a in node.attribute if a.name == 'training_mode'), 0)
        training += mode == 1
        if (training_norms is None and mode != 1
                and any(i in initializers for i in node.input[3:5])):
            raise ValueError(
                f"exporter='dynamo' wrote BatchNormalization node "
                f"'{node.name}' in inference mode, normalized by running "
                "statistics, from a module in training mode: use "
                "exporter='torchscript'")
    if training_norms is not None and training != training_norms:
        raise ValueError(
            f"exporter='dynamo' wrote {training} training-mode "
            f"BatchNormalization nodes for the {training_norms} training-mode "
            "batch norms torch.export recorded (a PyTorch the bridge's "
            "translation does not fit?): use exporter='torchscript'")


def compile_training(module: torch.nn.Module,
                     loss_fn: Callable[[torch.nn.Module, Dict[str, Any]], Any],
                     example_batch: Mapping[str, torch.Tensor], *,
                     optimizer: str = 'adamw', opset: int | None = None,
                     exporter: str = 'torchscript',
                     **options: Any) -> TorchTrainer:
    """Exports `loss_fn(module, batch)` (a scalar loss) at `example_batch`
    (a dict of tensors; their shapes and dtypes are fixed by it), compiles a
    training step with `optimizer` and trainc's other options (lr=...,
    precision=..., see trainc.compiler_help()) and returns its trainer.
    Parameters are trained; buffers are frozen. Raises CompileError, with
    module paths, when trainc cannot compile the exported graph.

    `exporter`: 'torchscript' (torch.onnx.export(dynamo=False), opset 17
    unless `opset` says otherwise) or 'dynamo' (torch.export, the exporter's
    own default opset unless given; its batch norms are written in training
    mode by a translation of the bridge's own, _torch_batch_norm.py, as the
    exporter's would write them in inference mode)."""
    if exporter not in ('torchscript', 'dynamo'):
        raise ValueError(f"exporter must be 'torchscript' or 'dynamo', not "
                         f"{exporter!r}")
    _check_norms(module, exporter)
    names = list(example_batch)
    tensors = tuple(torch.as_tensor(example_batch[n]) for n in names)
    wrapper = _LossModule(module, loss_fn, names)
    workdir = tempfile.mkdtemp(prefix='trainc-torch-')
    try:
        path = os.path.join(workdir, 'model.onnx')
        # A module in training mode is exported with the modes of its
        # parts (a batch norm or dropout the user put in eval mode stays
        # so, as PyTorch runs it); one in eval mode is trained whole, as
        # module.train() would. Every part gets its own mode back.
        modes = {m: m.training for m in module.modules()}
        # Exporting in training mode runs the forward once, which updates
        # the batch norms' running statistics: the module and the file
        # get the buffers as they were before it.
        buffers_before = {n: b.detach().clone()
                          for n, b in module.named_buffers(remove_duplicate=False)}
        changed = {}
        if not module.training:
            module.train()
        try:
            if exporter == 'dynamo':
                # In training mode as the module is; no graph optimization
                # (it would fold what trainc recognizes, and fuse a
                # training-mode batch norm into its convolution as if it
                # were in inference mode).
                from . import _torch_batch_norm
                program = torch.onnx.export(
                    wrapper, tensors, path, input_names=names,
                    output_names=['loss'], opset_version=opset, dynamo=True,
                    optimize=False, verbose=False,
                    custom_translation_table=_torch_batch_norm.TABLE)
                training_norms = _torch_batch_norm.training_batch_norms(program)
            else:
                torch.onnx.export(wrapper, tensors, path, input_names=names,
                                  output_names=['loss'],
                                  opset_version=17 if opset is None else opset,
                                  training=torch.onnx.TrainingMode.PRESERVE,
                                  do_constant_folding=False, dynamo=False)
        finally:
            if not modes[module]:
                module.train(False)  # (its own train() undoes what it did)
            for m, training in modes.items():
                m.training = training
            with torch.no_grad():
                for n, b in module.named_buffers(remove_duplicate=False):
                    if not torch.equal(b, buffers_before[n]):
                        changed[n] = buffers_before[n]
                        b.copy_(buffers_before[n])
        # Float buffers the exporter kept as initializers would be trained
        # as parameters: freeze them (integer ones are constants anyway).
        import onnx
        import onnx.numpy_helper
        # (External weights stay in their files; buffers are rewritten inline.)
        exported = onnx.load(path, load_external_data=False)
        restored = False
        for init in exported.graph.initializer:
            before = changed.get(init.name[len(_PREFIX):]
                                 if init.name.startswith(_PREFIX) else None)
            if before is not None:
                # (NumPy has no bfloat16: through float32.)
                value = before.cpu().to(torch.float32 if before.is_floating_point()
                                        else before.dtype).numpy().astype(
                    onnx.helper.tensor_dtype_to_np_dtype(init.data_type))
                init.CopyFrom(onnx.numpy_helper.from_array(value, init.name))
                restored = True
        if restored:
            onnx.save(exported, path)
        floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE,
                  onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
        initializers = {i.name for i in exported.graph.initializer
                        if i.data_type in floats}
        if exporter == 'dynamo':
            _check_dynamo_batch_norms(exported, training_norms)
        # (Tensors made in forward that torch.export keeps as initializers
        # it marks as constants, and trainc reads them so.)
        buffers = [_PREFIX + n for n, _ in module.named_buffers(remove_duplicate=False)
                   if _PREFIX + n in initializers]
        # Batch norms blend the unbiased variance into running_var, as
        # PyTorch's do (the ONNX file's definition is the population one).
        options.setdefault('unbiased_running_var', True)
        # scaled_dot_product_attention(dropout_p=p) (Hugging Face passes
        # its attention dropout so in training mode): both exporters write
        # it as a Dropout without training_mode, which ONNX defines as the
        # identity. The training step drops out, as PyTorch's does, unless
        # the caller trains in eval mode (evaluate() never drops out).
        if not options.get('eval_mode'):
            options.setdefault('train_modeless_dropout', True)
        # Embedding(padding_idx=row): the padding row gets no gradient in
        # PyTorch, which neither exporter writes down; trainc is told, under
        # the name the export gives the table.
        padded = _padding_rows(module, exported.graph)
        if padded:
            given = options.get('embedding_padding_index') or []
            options['embedding_padding_index'] = (
                [given] if isinstance(given, str) else list(given)) + padded
        try:
            executable = _compile(path, os.path.join(workdir, 'step.tcx'),
                                  train=True, optimizer=optimizer,
                                  freeze=buffers or None, **options)
        except CompileError as e:
            message = (_scoped_paths(str(e), exported) if exporter == 'dynamo'
                       else _module_paths(str(e)))
            raise CompileError(message, e.code) from None
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return TorchTrainer(executable, names, workdir)
