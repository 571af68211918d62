"""The JAX bridge: train a JAX loss function with trainc.

    import trainc.jax
    trainer = trainc.jax.compile_training(loss_fn, params, example_batch,
                                          optimizer='adamw', lr=1e-3)
    for batch in batches:               # pytrees like example_batch
        metrics = trainer.step(batch)
    params = trainer.params             # the same pytree, trained

The function is exported to StableHLO through jax.export (jax.jit's
lowering; trainc.jax_export), compiled by trainc with its parameters from
`params`, and stepped by the runtime: no JAX runs in a step. Options are
trainc's command-line options, as for trainc.compile.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Callable, Dict

import jax

from . import Executable, compile as _compile
from ._bridge import BridgeTrainer
from . import jax_export

__all__ = ['JaxTrainer', 'compile_training']


class JaxTrainer(BridgeTrainer):
    """A trainer of a JAX loss function: `step(batch)` and
    `evaluate(batch)` take a pytree like the example batch; `params`
    returns the current parameters as the pytree the function was exported
    with."""

    def __init__(self, executable: Executable, exported: jax_export.Exported,
                 like_params: Any, like_batch: Any, workdir: str):
        super().__init__(executable, workdir)
        self._exported = exported
        self._like_params = like_params
        self._batch_treedef = jax.tree_util.tree_structure(like_batch)

    def _inputs(self, batch: Any) -> Dict[str, Any]:
        if jax.tree_util.tree_structure(batch) != self._batch_treedef:
            raise ValueError('the batch has another structure than the '
                             f'example batch: {jax.tree_util.tree_structure(batch)} '
                             f'vs {self._batch_treedef}')
        # jax arrays go to the runtime through DLPack (trainc._as_input).
        return dict(jax_export.leaf_names(self._exported.batch_prefix, batch))

    def _compile_forward(self) -> Executable:
        return _compile(self._exported.mlir_path,
                        os.path.join(self._workdir, 'forward.tcx'),
                        params=self._exported.safetensors_path)

    @property
    def params(self) -> Any:
        """The current parameters, as a pytree of jax arrays like the
        initial params."""
        return jax_export.params_from_dict(self.trainer.state_dict(),
                                           self._like_params,
                                           self._exported.params_prefix,
                                           'the trainer')


def compile_training(loss_fn: Callable, params: Any, example_batch: Any, *,
                     optimizer: str = 'adamw', **options: Any) -> JaxTrainer:
    """Exports `loss_fn(params, batch) -> scalar` at `params` and
    `example_batch` (shapes and dtypes fixed by them), compiles a training
    step with `optimizer` and trainc's other options (lr=..., precision=...,
    recompute=..., see trainc.compiler_help()), and returns its trainer.
    Raises jax_export.ExportError for a function trainc cannot take and
    trainc.CompileError for one it cannot compile."""
    workdir = tempfile.mkdtemp(prefix='trainc-jax-')
    try:
        prefix = os.path.join(workdir, 'model')
        exported = jax_export.export(loss_fn, params, example_batch, prefix)
        executable = _compile(exported.mlir_path,
                              os.path.join(workdir, 'step.tcx'), train=True,
                              params=exported.safetensors_path,
                              optimizer=optimizer, **options)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return JaxTrainer(executable, exported, params, example_batch, workdir)
