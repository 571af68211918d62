"""ctypes declarations of the runtime's C API (runtime/include/trainc/runtime.h).

The package talks to the runtime only through this C API, loaded from the
libtrainc.so installed beside the package (trainc/_lib), or from the path in
the TRAINC_LIBRARY environment variable. Every call that can fail returns a
status; `check` turns a non-NULL status into a TraincError carrying its code
and message, and frees it.
"""
from __future__ import annotations

import ctypes
import glob
import os
from typing import Optional

import numpy as np

API_VERSION = 13

# trainc_status_code.
STATUS_CODES = {
    0: 'ok', 1: 'invalid argument', 2: 'not found', 3: 'out of range',
    4: 'failed precondition', 5: 'data loss', 6: 'unavailable',
    7: 'unimplemented', 8: 'internal',
}

# trainc_dtype -> NumPy dtype (None: no NumPy type; bf16 is ml_dtypes').
def _bfloat16():
    try:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:  # Bit patterns, as the runtime stores them.
        return np.dtype('<u2')


DTYPES = {
    0: np.dtype('<f8'), 1: np.dtype('<f4'), 2: np.dtype('<f2'), 3: None,
    4: np.dtype('<i8'), 5: np.dtype('<i4'), 6: np.dtype('bool'),
    7: np.dtype('<i2'), 8: np.dtype('i1'), 9: np.dtype('<u8'),
    10: np.dtype('<u4'), 11: np.dtype('<u2'), 12: np.dtype('u1'),
}
DTYPES[3] = _bfloat16()


class TraincError(RuntimeError):
    """An error reported by trainc: `code` is the C API status code's name
    ("invalid argument", "not found", ...), the message its text."""

    def __init__(self, message: str, code: str = 'internal'):
        super().__init__(message)
        self.code = code


class TensorInfo(ctypes.Structure):
    _fields_ = [('name', ctypes.c_char_p), ('dtype', ctypes.c_int),
                ('rank', ctypes.c_size_t),
                ('dims', ctypes.POINTER(ctypes.c_int64)),
                ('bytes', ctypes.c_size_t)]


class SessionOptions(ctypes.Structure):
    _fields_ = [('check_writes', ctypes.c_int), ('profile', ctypes.c_int)]


class TrainConfig(ctypes.Structure):
    _fields_ = [('data_paths', ctypes.POINTER(ctypes.c_char_p)),
                ('data_path_count', ctypes.c_size_t),
                ('data_format', ctypes.c_char_p),
                ('bin_token_bytes', ctypes.c_int),
                ('eval_fraction', ctypes.c_double),
                ('eval_batches', ctypes.c_int64),
                ('seed', ctypes.c_uint64),
                ('peak_flops', ctypes.c_double),
                ('tokens_input', ctypes.c_char_p),
                ('targets_input', ctypes.c_char_p),
                ('session', SessionOptions),
                ('spike_z', ctypes.c_double),
                # API version 9.
                ('device', ctypes.c_char_p),
                ('verify_steps', ctypes.c_int64),
                # API versions 11 and 12 (not set from Python: it feeds no
                # data files).
                ('data_progress', ctypes.c_void_p),
                ('data_progress_context', ctypes.c_void_p),
                ('data_cache_dir', ctypes.c_char_p)]


class StepMetrics(ctypes.Structure):
    _fields_ = [('step', ctypes.c_int64), ('loss', ctypes.c_double),
                ('grad_norm', ctypes.c_double),
                ('learning_rate', ctypes.c_double),
                ('step_seconds', ctypes.c_double),
                ('tokens_per_second', ctypes.c_double),
                ('flops_per_second', ctypes.c_double),
                ('mfu', ctypes.c_double),
                ('planned_bytes', ctypes.c_uint64),
                ('measured_bytes', ctypes.c_uint64),
                ('peak_rss_bytes', ctypes.c_uint64),
                ('evaluated', ctypes.c_int), ('eval_loss', ctypes.c_double),
                ('data_position', ctypes.c_uint64),
                ('has_loss', ctypes.c_int), ('skipped', ctypes.c_int),
                ('loss_z', ctypes.c_double), ('spike', ctypes.c_int),
                ('loss_scale', ctypes.c_double),
                # API version 7: runs of several ranks.
                ('comm_seconds', ctypes.c_double),
                ('median_compute_seconds', ctypes.c_double),
                ('slowest_compute_seconds', ctypes.c_double),
                ('slowest_rank', ctypes.c_int), ('straggler', ctypes.c_int),
                # API version 8.
                ('comm_total_seconds', ctypes.c_double),
                # API version 9: --verify-steps.
                ('verified', ctypes.c_int),
                ('verify_worst', ctypes.c_char_p),
                ('verify_worst_error', ctypes.c_double),
                ('verify_worst_limit', ctypes.c_double),
                # API version 10: sample data.
                ('samples_per_second', ctypes.c_double)]


STEP_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(StepMetrics),
                                 ctypes.c_void_p)

_lib: Optional[ctypes.CDLL] = None


def library_path() -> str:
    """The libtrainc.so this package uses."""
    override = os.environ.get('TRAINC_LIBRARY')
    if override:
        return override
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), '_lib')
    found = sorted(glob.glob(os.path.join(here, 'libtrainc.so*')))
    if not found:
        raise TraincError(
            f'libtrainc.so is not in {here}: the package was not installed '
            'with `pip install .` (or set TRAINC_LIBRARY to the library)',
            'not found')
    return found[0]


def _declare(lib: ctypes.CDLL) -> None:
    P = ctypes.c_void_p
    status = ctypes.c_void_p
    sigs = {
        'trainc_status_get_code': (ctypes.c_int, [status]),
        'trainc_status_message': (ctypes.c_char_p, [status]),
        'trainc_status_free': (None, [status]),
        'trainc_string_free': (None, [P]),
        'trainc_executable_open': (status, [ctypes.c_char_p,
                                            ctypes.POINTER(P)]),
        'trainc_executable_release': (None, [P]),
        'trainc_executable_input_count': (ctypes.c_size_t, [P]),
        'trainc_executable_output_count': (ctypes.c_size_t, [P]),
        'trainc_executable_input_info': (status, [P, ctypes.c_size_t,
                                                  ctypes.POINTER(TensorInfo)]),
        'trainc_executable_output_info': (status, [P, ctypes.c_size_t,
                                                   ctypes.POINTER(TensorInfo)]),
        'trainc_executable_describe': (status, [P, ctypes.POINTER(P)]),
        'trainc_executable_parameter_count': (ctypes.c_size_t, [P]),
        'trainc_session_create': (status, [P, ctypes.c_char_p,
                                           ctypes.POINTER(P)]),
        'trainc_session_release': (None, [P]),
        'trainc_session_set_input': (status, [P, ctypes.c_size_t, P,
                                              ctypes.c_size_t]),
        'trainc_session_run': (status, [P]),
        'trainc_session_output': (status, [P, ctypes.c_size_t,
                                           ctypes.POINTER(P),
                                           ctypes.POINTER(ctypes.c_size_t)]),
        'trainc_train_config_init': (None, [ctypes.POINTER(TrainConfig)]),
        'trainc_trainer_create': (status, [P, P, ctypes.POINTER(TrainConfig),
                                           ctypes.POINTER(P)]),
        'trainc_trainer_release': (None, [P]),
        'trainc_trainer_run': (status, [P, ctypes.c_int64, ctypes.c_int64,
                                        STEP_CALLBACK, P]),
        'trainc_trainer_save_safetensors': (status, [P, ctypes.c_char_p]),
        'trainc_trainer_save': (status, [P, ctypes.c_char_p]),
        'trainc_trainer_restore': (status, [P, ctypes.c_char_p]),
        'trainc_trainer_step_count': (ctypes.c_int64, [P]),
        'trainc_trainer_session': (P, [P]),
        'trainc_trainer_restore_note': (ctypes.c_char_p, [P]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    # Since API version 6: optional, so that older libraries still load.
    if hasattr(lib, 'trainc_trainer_load_safetensors'):
        lib.trainc_trainer_load_safetensors.restype = status
        lib.trainc_trainer_load_safetensors.argtypes = [P, ctypes.c_char_p]


def lib() -> ctypes.CDLL:
    """The loaded C API (loaded on first use)."""
    global _lib
    if _lib is None:
        path = library_path()
        try:
            loaded = ctypes.CDLL(path)
        except OSError as e:
            raise TraincError(f'cannot load {path}: {e}', 'unavailable')
        _declare(loaded)
        _check_structs(loaded)
        _lib = loaded
    return _lib


def _check_structs(lib: ctypes.CDLL) -> None:
    """The structs declared here must have the library's layout: a
    mismatch (a package and a libtrainc from different versions) would
    otherwise corrupt memory."""
    if not hasattr(lib, 'trainc_struct_size'):  # before API version 9
        raise TraincError(f'{library_path()} predates C API version '
                          f'{API_VERSION}: reinstall the trainc package',
                          'failed precondition')
    lib.trainc_struct_size.restype = ctypes.c_size_t
    lib.trainc_struct_size.argtypes = [ctypes.c_char_p]
    for c_name, struct in (('trainc_tensor_info', TensorInfo),
                           ('trainc_session_options', SessionOptions),
                           ('trainc_train_config', TrainConfig),
                           ('trainc_step_metrics', StepMetrics)):
        size = lib.trainc_struct_size(c_name.encode())
        if size != ctypes.sizeof(struct):
            raise TraincError(
                f'{c_name} is {size} bytes in {library_path()} but '
                f'{ctypes.sizeof(struct)} as this package declares it: the '
                f'package and the library are from different versions',
                'failed precondition')


def check(status) -> None:
    """Raises TraincError for a non-NULL status (and frees it)."""
    if not status:
        return
    api = lib()
    code = STATUS_CODES.get(api.trainc_status_get_code(status), 'internal')
    message = api.trainc_status_message(status).decode(errors='replace')
    api.trainc_status_free(status)
    raise TraincError(message, code)


def take_string(pointer: ctypes.c_void_p) -> str:
    """A string the C API returned (and frees)."""
    api = lib()
    text = ctypes.cast(pointer, ctypes.c_char_p).value.decode(errors='replace')
    api.trainc_string_free(pointer)
    return text
