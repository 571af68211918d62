"""trainc from Python: compile a model into a training executable and train it.

    import trainc
    exe = trainc.compile('model.onnx', train=True, optimizer='adamw', lr=1e-3)
    trainer = trainc.Trainer(exe)
    for batch in batches:                      # dicts of NumPy arrays
        metrics = trainer.step(batch)          # {'step': 1, 'loss': ..., ...}
    weights = trainer.state_dict()             # {name: np.ndarray}
    trainer.save('run/')                       # a checkpoint; restore('run/')

`compile` takes the `trainc` command line's options as keyword arguments,
spelled as the flags with '_' for '-' (`grad_accum=4` is `--grad-accum 4`,
`train=True` is `--train`): the command line is the one definition of every
option, and `trainc --help` (or `trainc.compiler_help()`) documents them.
The runtime is used through its C API (runtime/include/trainc/runtime.h);
its errors are raised as TraincError carrying the C API's status text.
Batches are dicts of NumPy arrays or of any host tensors that speak DLPack
(torch, JAX): their memory goes to the runtime without a Python-side copy
when its layout and dtype already fit.

Bridges: `trainc.jax.compile_training` (JAX functions).
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from typing import Any, Dict, Mapping, Optional, Sequence, Union

import numpy as np

from . import _capi
from ._capi import TraincError

__all__ = ['TraincError', 'CompileError', 'Executable', 'Trainer', 'compile',
           'compiler_help', 'tool_path', '__version__']

__version__ = '0.1.0'
#: The C API version this package was written against (runtime.h).
C_API_VERSION = _capi.API_VERSION

PathLike = Union[str, os.PathLike]


class CompileError(TraincError):
    """`trainc` refused the model or an option; the message is its error
    output."""


def tool_path(name: str) -> str:
    """The path of a trainc tool ('trainc' or 'trainc-run'): the one
    installed in the package (trainc/_bin), or $TRAINC_BIN_DIR/<name>."""
    override = os.environ.get('TRAINC_BIN_DIR')
    directory = override or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '_bin')
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        raise TraincError(f'{name} is not in {directory}: install the '
                          'package with `pip install .` (or set '
                          'TRAINC_BIN_DIR)', 'not found')
    return path


def _flags(options: Mapping[str, Any]) -> list:
    """Keyword options as `trainc` flags."""
    flags = []
    for key, value in options.items():
        flag = '--' + key.replace('_', '-')
        if value is None or value is False:
            continue
        if value is True:
            flags.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                flags += [flag, str(v)]
        elif isinstance(value, Mapping):  # input_shape={'tokens': (8, 128)}
            for name, v in value.items():
                if isinstance(v, (list, tuple)):
                    v = 'x'.join(str(d) for d in v)
                flags += [flag, f'{name}={v}']
        else:
            flags += [flag, str(value)]
    return flags


def compiler_help() -> str:
    """`trainc --help`: every option `compile` accepts."""
    return subprocess.run([tool_path('trainc'), '--help'], capture_output=True,
                          text=True).stdout


class Executable:
    """A compiled executable (.tcx), opened through the C API.

    `path` is the file; `inputs` and `outputs` map names to
    (NumPy dtype, shape). A temporary file made by `compile` without
    `output` is deleted when the executable is closed or collected."""

    def __init__(self, path: PathLike, _temporary_dir: Optional[str] = None):
        self.path = os.fspath(path)
        self._temporary_dir = _temporary_dir
        self._handle = ctypes.c_void_p()
        api = _capi.lib()
        _capi.check(api.trainc_executable_open(self.path.encode(),
                                               ctypes.byref(self._handle)))
        self.inputs = self._infos(api.trainc_executable_input_count,
                                  api.trainc_executable_input_info)
        self.outputs = self._infos(api.trainc_executable_output_count,
                                   api.trainc_executable_output_info)

    def _infos(self, count_fn, info_fn) -> Dict[str, tuple]:
        infos = {}
        for i in range(count_fn(self._handle)):
            info = _capi.TensorInfo()
            _capi.check(info_fn(self._handle, i, ctypes.byref(info)))
            name = info.name.decode() if info.name else f'#{i}'
            shape = tuple(info.dims[d] for d in range(info.rank))
            infos[name] = (_capi.DTYPES.get(info.dtype), shape, i)
        return infos

    @property
    def parameter_count(self) -> int:
        """The number of parameters (trained weights)."""
        return _capi.lib().trainc_executable_parameter_count(self._handle)

    def describe(self) -> str:
        """The executable as text (what `trainc-run --inspect` prints)."""
        text = ctypes.c_void_p()
        _capi.check(_capi.lib().trainc_executable_describe(
            self._handle, ctypes.byref(text)))
        return _capi.take_string(text)

    def close(self) -> None:
        if self._handle:
            _capi.lib().trainc_executable_release(self._handle)
            self._handle = ctypes.c_void_p()
        if self._temporary_dir:
            shutil.rmtree(self._temporary_dir, ignore_errors=True)
            self._temporary_dir = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f'trainc.Executable({self.path!r})'


def compile(model: PathLike, output: Optional[PathLike] = None, *,
            train: bool = False, **options: Any) -> Executable:
    """Compiles `model` (an ONNX file, StableHLO text or graph-dialect MLIR)
    with `trainc` and opens the executable.

    `options` are trainc's command-line options by name ('_' for '-'):
    optimizer='adamw', lr=1e-3, precision='bf16', recompute='selective',
    grad_accum=4, params='init.safetensors', input_shape={'tokens': (8,
    128)}, freeze=['*.inv_freq'], ... (see `compiler_help()`). `output`
    keeps the .tcx there; by default it lives in a temporary directory
    until the executable is closed. Raises CompileError with trainc's
    message when the model or an option is refused."""
    temporary = None
    if output is None:
        temporary = tempfile.mkdtemp(prefix='trainc-')
        output = os.path.join(temporary, 'model.tcx')
    output = os.fspath(output)
    if not output.endswith('.tcx'):
        raise TraincError(f"output '{output}' must end in .tcx",
                          'invalid argument')
    command = [tool_path('trainc'), os.fspath(model), '-o', output]
    if train:
        command.append('--train')
    command += _flags(options)
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
        message = proc.stderr.strip() or f'trainc exited with {proc.returncode}'
        raise CompileError(message, 'invalid argument')
    return Executable(output, _temporary_dir=temporary)


def _as_input(name: str, value: Any, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """`value` as a C-contiguous array of the input's dtype: without a copy
    when it already is one (a NumPy array, or through DLPack a CPU tensor
    of another framework: torch, JAX, CuPy on the host)."""
    if not isinstance(value, np.ndarray) and hasattr(value, '__dlpack__'):
        try:
            value = np.from_dlpack(value)
        except (BufferError, TypeError, RuntimeError):
            pass  # Not on the host, or not exportable: np.asarray copies.
    array = np.asarray(value)
    if array.shape != shape:
        raise TraincError(f"input '{name}' has shape {array.shape}; the "
                          f"executable takes {shape}", 'invalid argument')
    if array.dtype != dtype:
        if array.dtype.kind != dtype.kind and not (
                array.dtype.kind in 'iu' and dtype.kind in 'iu'):
            raise TraincError(f"input '{name}' is {array.dtype}; the "
                              f"executable takes {dtype}", 'invalid argument')
        if dtype.kind in 'iu' and array.size:
            info = np.iinfo(dtype)
            if array.min() < info.min or array.max() > info.max:
                raise TraincError(
                    f"input '{name}' has values in [{array.min()}, "
                    f"{array.max()}], outside the executable's {dtype}",
                    'invalid argument')
        array = array.astype(dtype)
    return np.ascontiguousarray(array)


def _create_trainer(executable: Executable,
                    device: str = 'cpu') -> ctypes.c_void_p:
    """A C API trainer of `executable` on `device` without data files
    (inputs are set through its session)."""
    api = _capi.lib()
    config = _capi.TrainConfig()
    api.trainc_train_config_init(ctypes.byref(config))
    config.device = device.encode()
    handle = ctypes.c_void_p()
    _capi.check(api.trainc_trainer_create(executable._handle, None,
                                          ctypes.byref(config),
                                          ctypes.byref(handle)))
    return handle


class Trainer:
    """Steps a training executable (`compile(..., train=True)`) on batches
    given as dicts of NumPy arrays, through the C API's trainer.

    Parameters and optimizer state live in the runtime between steps;
    `evaluate(batch)` runs the forward executable with them,
    `state_dict()` reads the parameters, `load_state_dict()` sets them,
    `save(dir)` / `restore(dir)` checkpoint the whole run (parameters,
    optimizer state, step: a restored trainer continues bitwise)."""

    def __init__(self, executable: Executable,
                 eval_executable: Optional[Executable] = None,
                 device: str = 'cpu'):
        """`executable` is a training step; `eval_executable` (optional) the
        forward executable of the same model (`compile(model)`), which
        `evaluate` runs with the current parameters; `device` as
        trainc-run --device takes it ('cpu', 'cuda', 'cuda:N', 'auto')."""
        if not isinstance(executable, Executable):
            raise TypeError('Trainer takes a trainc.Executable')
        self.executable = executable
        self.eval_executable = eval_executable
        self._device = device
        self._handle = _create_trainer(executable, device)
        self._session = _capi.lib().trainc_trainer_session(self._handle)
        self._eval = None
        if eval_executable is not None:
            self.set_eval_executable(eval_executable)
        self._last: Dict[str, Any] = {}

        def on_step(metrics, _user):
            m = metrics.contents
            self._last = {name: getattr(m, name)
                          for name, _ in _capi.StepMetrics._fields_}
            return 0
        self._callback = _capi.STEP_CALLBACK(on_step)

    def _set_inputs(self, executable: Executable, session,
                    batch: Mapping[str, Any]) -> None:
        api = _capi.lib()
        missing = [n for n in executable.inputs if n not in batch]
        extra = [n for n in batch if n not in executable.inputs]
        if missing or extra:
            raise TraincError(
                f'the batch must have exactly the inputs '
                f'{sorted(executable.inputs)}; missing {missing}, '
                f'unknown {extra}', 'invalid argument')
        for name, (dtype, shape, index) in executable.inputs.items():
            array = _as_input(name, batch[name], dtype, shape)
            _capi.check(api.trainc_session_set_input(
                session, index, array.ctypes.data_as(ctypes.c_void_p),
                array.nbytes))

    def step(self, batch: Mapping[str, Any]) -> Dict[str, Any]:
        """One training step on `batch` (every input of the executable, by
        name); returns the step's metrics: step, loss, grad_norm,
        learning_rate, skipped (the step's loss or gradients were not
        finite, so nothing was updated), loss_scale, step_seconds, ..."""
        self._set_inputs(self.executable, self._session, batch)
        _capi.check(_capi.lib().trainc_trainer_run(self._handle, 1, 0,
                                                   self._callback, None))
        metrics = dict(self._last)
        for flag in ('evaluated', 'has_loss', 'skipped', 'spike', 'verified'):
            metrics[flag] = bool(metrics[flag])
        return metrics

    def set_eval_executable(self, eval_executable: Executable) -> None:
        """The forward executable `evaluate` runs (`compile(model)`)."""
        if self._eval:
            _capi.lib().trainc_trainer_release(self._eval)
        # A trainer without data runs a forward executable as it is.
        self._eval = _create_trainer(eval_executable, self._device)
        self.eval_executable = eval_executable

    def evaluate(self, batch: Mapping[str, Any]) -> float:
        """The loss of the forward executable (`eval_executable`) on
        `batch` with the current parameters; nothing is updated."""
        if self._eval is None:
            raise TraincError(
                'evaluate needs the forward executable of the same model: '
                'Trainer(step, eval_executable=trainc.compile(model))',
                'failed precondition')
        api = _capi.lib()
        with tempfile.TemporaryDirectory(prefix='trainc-') as tmp:
            path = os.path.join(tmp, 'weights.safetensors').encode()
            _capi.check(api.trainc_trainer_save_safetensors(self._handle, path))
            _capi.check(api.trainc_trainer_load_safetensors(self._eval, path))
        self._set_inputs(self.eval_executable,
                         api.trainc_trainer_session(self._eval), batch)
        _capi.check(api.trainc_trainer_run(self._eval, 1, 0, self._callback,
                                           None))
        if not self._last['has_loss']:
            raise TraincError(f'{self.eval_executable.path} has no loss '
                              'output', 'invalid argument')
        return self._last['loss']

    def output(self, name: str, copy: bool = True) -> np.ndarray:
        """Output `name` of the last step. With copy=False, a read-only view
        of the runtime's memory (no copy), valid until the next step."""
        if name not in self.executable.outputs:
            raise TraincError(f"no output '{name}' (outputs: "
                              f"{sorted(self.executable.outputs)})",
                              'not found')
        dtype, shape, index = self.executable.outputs[name]
        data = ctypes.c_void_p()
        size = ctypes.c_size_t()
        _capi.check(_capi.lib().trainc_session_output(
            self._session, index, ctypes.byref(data), ctypes.byref(size)))
        buffer = (ctypes.c_char * size.value).from_address(data.value)
        view = np.frombuffer(buffer, dtype=dtype).reshape(shape)
        view.flags.writeable = False
        return view.copy() if copy else view

    @property
    def step_count(self) -> int:
        """Steps done so far (restored runs included)."""
        return _capi.lib().trainc_trainer_step_count(self._handle)

    def state_dict(self) -> Dict[str, np.ndarray]:
        """The parameters by their model names, as NumPy arrays (copies)."""
        with tempfile.TemporaryDirectory(prefix='trainc-') as tmp:
            path = os.path.join(tmp, 'weights.safetensors')
            _capi.check(_capi.lib().trainc_trainer_save_safetensors(
                self._handle, path.encode()))
            return _read_safetensors(path)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Sets every parameter from `state` (names as state_dict gives;
        every parameter, with its shape and dtype). The optimizer state and
        the step count are kept."""
        api = _capi.lib()
        if not hasattr(api, 'trainc_trainer_load_safetensors'):
            raise TraincError('this libtrainc predates C API version 6 '
                              '(trainc_trainer_load_safetensors)',
                              'unimplemented')
        with tempfile.TemporaryDirectory(prefix='trainc-') as tmp:
            path = os.path.join(tmp, 'weights.safetensors')
            _write_safetensors(path, state)
            _capi.check(api.trainc_trainer_load_safetensors(
                self._handle, path.encode()))

    def save(self, directory: PathLike) -> None:
        """Checkpoints the run into `directory` (atomic; see the C API's
        trainc_trainer_save)."""
        _capi.check(_capi.lib().trainc_trainer_save(
            self._handle, os.fspath(directory).encode()))

    def restore(self, directory: PathLike) -> None:
        """Continues the run saved in `directory` (its newest checkpoint
        that verifies)."""
        _capi.check(_capi.lib().trainc_trainer_restore(
            self._handle, os.fspath(directory).encode()))

    def close(self) -> None:
        for attr in ('_handle', '_eval'):
            handle = getattr(self, attr, None)
            if handle:
                _capi.lib().trainc_trainer_release(handle)
                setattr(self, attr, None)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


# safetensors without the safetensors package: the runtime writes and reads
# the format (8-byte header size, JSON header, data).
_ST_DTYPES = {'F64': '<f8', 'F32': '<f4', 'F16': '<f2', 'I64': '<i8',
              'I32': '<i4', 'I16': '<i2', 'I8': 'i1', 'U64': '<u8',
              'U32': '<u4', 'U16': '<u2', 'U8': 'u1', 'BOOL': 'bool'}


def _read_safetensors(path: str) -> Dict[str, np.ndarray]:
    import json
    with open(path, 'rb') as f:
        data = f.read()
    size = int.from_bytes(data[:8], 'little')
    header = json.loads(data[8:8 + size])
    tensors = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        begin, end = info['data_offsets']
        dtype = (_capi.DTYPES[3] if info['dtype'] == 'BF16'
                 else np.dtype(_ST_DTYPES[info['dtype']]))
        raw = data[8 + size + begin:8 + size + end]
        tensors[name] = np.frombuffer(raw, dtype=dtype).reshape(
            info['shape']).copy()
    return tensors


def _write_safetensors(path: str, tensors: Mapping[str, Any]) -> None:
    import json
    names = {np.dtype(v): k for k, v in _ST_DTYPES.items()}
    header, chunks, offset = {}, [], 0
    for name, value in tensors.items():
        array = np.ascontiguousarray(np.asarray(value))
        if array.dtype == _capi.DTYPES[3]:
            kind = 'BF16'
        elif array.dtype.newbyteorder('<') in names:
            kind = names[array.dtype.newbyteorder('<')]
            array = array.astype(array.dtype.newbyteorder('<'))
        else:
            raise TraincError(f"'{name}' has dtype {array.dtype}, which "
                              'safetensors cannot hold', 'invalid argument')
        raw = array.tobytes()
        header[name] = {'dtype': kind, 'shape': list(array.shape),
                        'data_offsets': [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b' ' * (-len(text) % 8)
    with open(path, 'wb') as f:
        f.write(len(text).to_bytes(8, 'little') + text + b''.join(chunks))
