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
import threading
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
    `output` is deleted when the executable is closed or collected. After
    `close()`, `parameter_count`, `describe()` and a new Trainer of it
    raise TraincError; Trainers made before keep the program."""

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

    def _live(self) -> ctypes.c_void_p:
        """The C API handle; TraincError once the executable is closed."""
        if not self._handle:
            raise TraincError(f"the Executable '{self.path}' is closed",
                              'failed precondition')
        return self._handle

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
        return _capi.lib().trainc_executable_parameter_count(self._live())

    def describe(self) -> str:
        """The executable as text (what `trainc-run --inspect` prints)."""
        text = ctypes.c_void_p()
        _capi.check(_capi.lib().trainc_executable_describe(
            self._live(), ctypes.byref(text)))
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
    model = _checked_path(model, 'model')
    temporary = None
    if output is None:
        temporary = tempfile.mkdtemp(prefix='trainc-')
        output = os.path.join(temporary, 'model.tcx')
    output = os.fspath(output)
    if not output.endswith('.tcx'):
        raise TraincError(f"output '{output}' must end in .tcx",
                          'invalid argument')
    command = [tool_path('trainc'), model, '-o', output]
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


def _checked_path(path: PathLike, what: str) -> str:
    """`path` as a string for the runtime or trainc; TraincError for a
    value that is no path or one with a NUL (which C would cut short)."""
    try:
        text = os.fspath(path)
    except TypeError:
        raise TraincError(f'{what} must be a path (str or os.PathLike), not '
                          f'{type(path).__name__}', 'invalid argument') from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if '\0' in text:
        raise TraincError(f'{what} {text!r} contains a NUL character',
                          'invalid argument')
    return text


class _Native:
    """A Trainer's C API trainers (the step's and evaluate's), released
    when nothing refers to them: the Trainer until close(), and each view
    of their memory that output(copy=False) handed out."""

    def __init__(self, handle: ctypes.c_void_p):
        self.handle = handle
        self.session = _capi.lib().trainc_trainer_session(handle)
        self.eval: Optional[ctypes.c_void_p] = None

    def set_eval(self, handle: Optional[ctypes.c_void_p]) -> None:
        if self.eval:
            _capi.lib().trainc_trainer_release(self.eval)
        self.eval = handle

    def __del__(self):
        try:
            api = _capi.lib()
            for handle in (self.handle, self.eval):
                if handle:
                    api.trainc_trainer_release(handle)
        except Exception:
            pass


def _create_trainer(executable: Executable,
                    device: str = 'cpu') -> ctypes.c_void_p:
    """A C API trainer of `executable` on `device` without data files
    (inputs are set through its session)."""
    api = _capi.lib()
    config = _capi.TrainConfig()
    api.trainc_train_config_init(ctypes.byref(config))
    config.device = device.encode()
    handle = ctypes.c_void_p()
    _capi.check(api.trainc_trainer_create(executable._live(), None,
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
    optimizer state, step: a restored trainer continues bitwise).

    A Trainer may be shared between threads: its calls run one at a time.
    After `close()` every call raises TraincError."""

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
        self._lock = threading.RLock()
        self._native: Optional[_Native] = _Native(
            _create_trainer(executable, device))
        if eval_executable is not None:
            self.set_eval_executable(eval_executable)
        # The step callback's metrics go here; the callback refers to this
        # dict, not to the Trainer, so that a Trainer no one refers to is
        # freed at once (no reference cycle through the callback).
        last: Dict[str, Any] = {}
        self._last = last

        def on_step(metrics, _user):
            m = metrics.contents
            last.clear()
            last.update((name, getattr(m, name))
                        for name, _ in _capi.StepMetrics._fields_)
            return 0
        self._callback = _capi.STEP_CALLBACK(on_step)

    def _live(self) -> _Native:
        """The native trainers; TraincError once the Trainer is closed."""
        native = self._native
        if native is None:
            raise TraincError('the Trainer is closed', 'failed precondition')
        return native

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
        with self._lock:
            native = self._live()
            self._set_inputs(self.executable, native.session, batch)
            _capi.check(_capi.lib().trainc_trainer_run(
                native.handle, 1, 0, self._callback, None))
            metrics = dict(self._last)
        for flag in ('evaluated', 'has_loss', 'skipped', 'spike', 'verified'):
            metrics[flag] = bool(metrics[flag])
        if isinstance(metrics.get('verify_worst'), bytes):
            metrics['verify_worst'] = metrics['verify_worst'].decode(
                errors='replace')
        return metrics

    def set_eval_executable(self, eval_executable: Executable) -> None:
        """The forward executable `evaluate` runs (`compile(model)`)."""
        with self._lock:
            native = self._live()
            # A trainer without data runs a forward executable as it is.
            native.set_eval(_create_trainer(eval_executable, self._device))
            self.eval_executable = eval_executable

    def evaluate(self, batch: Mapping[str, Any]) -> float:
        """The loss of the forward executable (`eval_executable`) on
        `batch` with the current parameters; nothing is updated."""
        with self._lock:
            native = self._live()
            if native.eval is None:
                raise TraincError(
                    'evaluate needs the forward executable of the same '
                    'model: Trainer(step, eval_executable=trainc.compile('
                    'model))', 'failed precondition')
            api = _capi.lib()
            with tempfile.TemporaryDirectory(prefix='trainc-') as tmp:
                path = os.path.join(tmp, 'weights.safetensors').encode()
                _capi.check(api.trainc_trainer_save_safetensors(native.handle,
                                                                path))
                _capi.check(api.trainc_trainer_load_safetensors(native.eval,
                                                                path))
            self._set_inputs(self.eval_executable,
                             api.trainc_trainer_session(native.eval), batch)
            _capi.check(api.trainc_trainer_run(native.eval, 1, 0,
                                               self._callback, None))
            if not self._last['has_loss']:
                raise TraincError(f'{self.eval_executable.path} has no loss '
                                  'output', 'invalid argument')
            return self._last['loss']

    def output(self, name: str, copy: bool = True) -> np.ndarray:
        """Output `name` of the last step. With copy=False, a read-only view
        of the runtime's memory (no copy): the next step overwrites it, and
        it keeps that memory alive after close() until the view is gone."""
        if name not in self.executable.outputs:
            raise TraincError(f"no output '{name}' (outputs: "
                              f"{sorted(self.executable.outputs)})",
                              'not found')
        dtype, shape, index = self.executable.outputs[name]
        with self._lock:
            native = self._live()
            data = ctypes.c_void_p()
            size = ctypes.c_size_t()
            _capi.check(_capi.lib().trainc_session_output(
                native.session, index, ctypes.byref(data), ctypes.byref(size)))
            buffer = (ctypes.c_char * size.value).from_address(data.value)
            if copy:
                return np.frombuffer(buffer, dtype=dtype).reshape(shape).copy()
            # The view's base chain holds the buffer, which holds the native
            # trainers; read-only memory, so no view can be made writable.
            buffer._trainc_native = native
            view = np.frombuffer(memoryview(buffer).toreadonly(), dtype=dtype)
            return view.reshape(shape)

    @property
    def step_count(self) -> int:
        """Steps done so far (restored runs included)."""
        with self._lock:
            return _capi.lib().trainc_trainer_step_count(self._live().handle)

    def state_dict(self) -> Dict[str, np.ndarray]:
        """The parameters by their model names, as NumPy arrays (copies)."""
        with self._lock, tempfile.TemporaryDirectory(prefix='trainc-') as tmp:
            path = os.path.join(tmp, 'weights.safetensors')
            _capi.check(_capi.lib().trainc_trainer_save_safetensors(
                self._live().handle, path.encode()))
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
        with self._lock, tempfile.TemporaryDirectory(prefix='trainc-') as tmp:
            native = self._live()
            path = os.path.join(tmp, 'weights.safetensors')
            _write_safetensors(path, state)
            try:
                _capi.check(api.trainc_trainer_load_safetensors(
                    native.handle, path.encode()))
            except TraincError as e:
                # The file is ours: name the argument instead.
                raise TraincError(str(e).replace(path, 'the state dict'),
                                  e.code) from None

    def save(self, directory: PathLike) -> None:
        """Checkpoints the run into `directory` (atomic; see the C API's
        trainc_trainer_save)."""
        directory = _checked_path(directory, 'directory')
        with self._lock:
            _capi.check(_capi.lib().trainc_trainer_save(
                self._live().handle, os.fsencode(directory)))

    def restore(self, directory: PathLike) -> str:
        """Continues the run saved in `directory` from the checkpoint its
        `latest` names (the last save that completed and verified) or, if
        that one does not load, from the newest other one that does.
        Returns what was restored: the checkpoint's name, then one line per
        checkpoint that was skipped and why (a damaged one); a skipped
        checkpoint also raises a RuntimeWarning, since steps it held may be
        lost."""
        directory = _checked_path(directory, 'directory')
        with self._lock:
            native = self._live()
            api = _capi.lib()
            _capi.check(api.trainc_trainer_restore(native.handle,
                                                   os.fsencode(directory)))
            note = api.trainc_trainer_restore_note(native.handle)
        note = note.decode(errors='replace') if note else ''
        if '\n' in note.strip():
            import warnings
            warnings.warn(f'restored {directory} from another checkpoint: '
                          f'{note.strip()}', RuntimeWarning, stacklevel=2)
        return note.strip()

    def close(self) -> None:
        """Releases the runtime's memory (once no output view of it is
        alive); every later call raises TraincError."""
        with self._lock:
            self._native = None

    def __del__(self):
        self._native = None

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
