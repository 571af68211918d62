"""Tests of the installed `trainc` package (run by ctest python.package in a
fresh venv after `pip install .`; see test/Install/python_package.sh).

Environment: TRAINC_SHARED_DATA (../shared/data: tinygpt) and TRAINC_REPO
(the checkout: test/Models/jax_models.py for the JAX bridge). The package
itself must come from site-packages, never from the checkout.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import trainc

SHARED = os.environ.get('TRAINC_SHARED_DATA', '')
REPO = os.environ.get('TRAINC_REPO', '')
MODEL = os.path.join(SHARED, 'tinygpt', 'tied_erf', 'model_train_opset17.onnx')
ADAMW = dict(optimizer='adamw', lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
             weight_decay=0.01)
STEPS = 5


def tinygpt_batch(exe):
    """A fixed batch of token ids for tinygpt's inputs."""
    rng = np.random.default_rng(0)
    return {name: rng.integers(0, 64, size=shape).astype(dtype)
            for name, (dtype, shape, _) in exe.inputs.items()}


class Installed(unittest.TestCase):
    def test_package_is_installed_not_the_checkout(self):
        self.assertIn('site-packages', trainc.__file__)
        self.assertTrue(os.path.exists(trainc.tool_path('trainc')))
        self.assertTrue(os.path.exists(trainc.tool_path('trainc-run')))
        # Type hints are part of the API (PEP 561).
        self.assertTrue(os.path.exists(os.path.join(
            os.path.dirname(trainc.__file__), 'py.typed')))
        self.assertEqual(trainc.__version__, '0.1.0')

    def test_the_cuda_device_library_comes_with_a_cuda_build(self):
        # The project builds the CUDA device wherever nvcc is found (its
        # AUTO default); the package then carries the library, which the
        # runtime opens only when a GPU is asked for.
        nvcc = any(os.access(p, os.X_OK) for p in (
            '/usr/local/cuda/bin/nvcc', *(os.path.join(d, 'nvcc') for d in
                                          os.environ.get('PATH', '').split(':'))))
        library = os.path.join(os.path.dirname(trainc.__file__), '_lib',
                               'libtrainc_cuda.so')
        self.assertEqual(os.path.exists(library), nvcc)


class WithStep(unittest.TestCase):
    """Tests given tinygpt's AdamW step (self.exe), a batch for it and a
    scratch directory (self.dir)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.exe = trainc.compile(MODEL, os.path.join(self.dir, 'step.tcx'),
                                  train=True, **ADAMW)
        self.batch = tinygpt_batch(self.exe)

    def tearDown(self):
        self.exe.close()
        self.tmp.cleanup()


class Training(WithStep):

    def test_a_device_that_is_not_there_is_an_error_that_says_so(self):
        has_gpu = subprocess.run(['sh', '-c', 'nvidia-smi -L'],
                                 capture_output=True).returncode == 0
        if has_gpu:
            self.skipTest('a GPU is present')
        with self.assertRaises(trainc.TraincError) as raised:
            trainc.Trainer(self.exe, device='cuda')
        self.assertEqual(raised.exception.code, 'unavailable')
        self.assertIn('CUDA', str(raised.exception))
        # 'auto' falls back to the CPU and trains.
        metrics = trainc.Trainer(self.exe, device='auto').step(self.batch)
        self.assertTrue(np.isfinite(metrics['loss']))
        self.assertFalse(metrics['verified'])

    def test_losses_equal_the_command_lines_bitwise(self):
        inputs = []
        for name, value in self.batch.items():
            path = os.path.join(self.dir, name + '.npy')
            np.save(path, value)
            inputs += ['--input', f'{name}={path}']
        log = os.path.join(self.dir, 'log.jsonl')
        subprocess.run([trainc.tool_path('trainc-run'), self.exe.path, *inputs,
                        '--steps', str(STEPS), '--log-jsonl', log,
                        '--output-dir', os.path.join(self.dir, 'out')],
                       check=True, capture_output=True)
        with open(log) as f:
            cli = [json.loads(line)['loss'] for line in f]
        trainer = trainc.Trainer(self.exe)
        python = [trainer.step(self.batch)['loss'] for _ in range(STEPS)]
        self.assertEqual(python, cli)
        self.assertLess(python[-1], python[0])
        self.assertEqual(trainer.step_count, STEPS)

    def test_dlpack_inputs(self):
        import jax.numpy as jnp
        trainer = trainc.Trainer(self.exe)
        via_numpy = trainc.Trainer(self.exe)
        jax_batch = {name: jnp.asarray(value) for name, value in self.batch.items()}
        shared = np.from_dlpack(jax_batch[next(iter(jax_batch))])
        self.assertTrue(np.shares_memory(shared, np.from_dlpack(
            jax_batch[next(iter(jax_batch))])))
        self.assertEqual(trainer.step(jax_batch)['loss'],
                         via_numpy.step(self.batch)['loss'])

    def test_metrics_and_outputs(self):
        trainer = trainc.Trainer(self.exe)
        metrics = trainer.step(self.batch)
        for key in ('step', 'loss', 'grad_norm', 'learning_rate', 'skipped'):
            self.assertIn(key, metrics)
        self.assertEqual(metrics['step'], 1)
        self.assertFalse(metrics['skipped'])
        # The batch's tokens per second, though the trainer has no data.
        tokens = self.exe.inputs['tokens'][1] if 'tokens' in self.exe.inputs \
            else next(iter(self.exe.inputs.values()))[1]
        self.assertAlmostEqual(metrics['tokens_per_second'] * metrics['step_seconds'],
                               float(np.prod(tokens)), delta=1e-6 * np.prod(tokens))
        view = trainer.output('loss', copy=False)
        self.assertFalse(view.flags.writeable)
        self.assertEqual(float(view), metrics['loss'])
        self.assertEqual(float(trainer.output('loss')), metrics['loss'])

    def test_evaluate_is_the_next_steps_loss(self):
        forward = trainc.compile(MODEL)
        trainer = trainc.Trainer(self.exe, eval_executable=forward)
        for _ in range(3):
            trainer.step(self.batch)
        loss = trainer.evaluate(self.batch)
        self.assertEqual(trainer.step_count, 3)
        # The step reports the loss before its update: the same forward.
        self.assertEqual(loss, trainer.step(self.batch)['loss'])
        with self.assertRaises(trainc.TraincError) as caught:
            trainc.Trainer(self.exe).evaluate(self.batch)
        self.assertEqual(caught.exception.code, 'failed precondition')
        forward.close()

    def test_save_and_restore_continue_bitwise(self):
        first = trainc.Trainer(self.exe)
        for _ in range(3):
            first.step(self.batch)
        checkpoint = os.path.join(self.dir, 'run')
        first.save(checkpoint)
        expected = [first.step(self.batch)['loss'] for _ in range(2)]
        second = trainc.Trainer(self.exe)
        second.restore(checkpoint)
        self.assertEqual(second.step_count, 3)
        self.assertEqual([second.step(self.batch)['loss'] for _ in range(2)],
                         expected)

    def test_state_dict_round_trip(self):
        trainer = trainc.Trainer(self.exe)
        trainer.step(self.batch)
        state = trainer.state_dict()
        self.assertEqual(len(state), self.exe.parameter_count)
        changed = {name: (value * 0.5).astype(value.dtype)
                   for name, value in state.items()}
        trainer.load_state_dict(changed)
        for name, value in trainer.state_dict().items():
            np.testing.assert_array_equal(value, changed[name], err_msg=name)
        # A second trainer given the same weights computes the same loss.
        other = trainc.Trainer(self.exe)
        other.load_state_dict(changed)
        self.assertEqual(other.step(self.batch)['loss'],
                         trainer.step(self.batch)['loss'])

    def test_load_state_dict_refuses_a_wrong_shape(self):
        trainer = trainc.Trainer(self.exe)
        state = trainer.state_dict()
        name = next(iter(state))
        state[name] = np.zeros((3,), state[name].dtype)
        with self.assertRaises(trainc.TraincError) as caught:
            trainer.load_state_dict(state)
        self.assertIn(name, str(caught.exception))

    def test_bad_batches_raise_errors_naming_the_input(self):
        trainer = trainc.Trainer(self.exe)
        name = next(iter(self.batch))
        with self.assertRaises(trainc.TraincError) as caught:
            trainer.step({'nonsense': 1})
        self.assertEqual(caught.exception.code, 'invalid argument')
        # Ids that do not fit the input's integer type are refused, not
        # wrapped: 2^63 for int64 inputs, 2^40 for int32 ones.
        big = (np.uint64(2 ** 63) if self.exe.inputs[name][0] == np.int64
               else np.int64(2 ** 40))
        huge = {n: np.full(v.shape, big) for n, v in self.batch.items()}
        with self.assertRaises(trainc.TraincError) as caught:
            trainer.step(huge)
        self.assertIn('outside', str(caught.exception))
        wrong = dict(self.batch)
        wrong[name] = wrong[name][:, :3]
        with self.assertRaises(trainc.TraincError) as caught:
            trainer.step(wrong)
        self.assertIn(name, str(caught.exception))


class Misuse(WithStep):
    """What a user may get wrong (or race) must raise, never crash: found
    by driving the package with bad calls."""

    def test_a_closed_trainer_raises(self):
        trainer = trainc.Trainer(self.exe)
        trainer.step(self.batch)
        trainer.close()
        for call in (lambda: trainer.step(self.batch),
                     lambda: trainer.output('loss'),
                     lambda: trainer.state_dict(),
                     lambda: trainer.save(os.path.join(self.dir, 'x')),
                     lambda: trainer.step_count):
            with self.assertRaises(trainc.TraincError) as caught:
                call()
            self.assertIn('closed', str(caught.exception))

    def test_a_closed_executable_raises(self):
        # Before: parameter_count was 0, describe() and Trainer(...) said
        # "executable is null", an argument the caller never passed.
        exe = trainc.Executable(self.exe.path)
        trainer = trainc.Trainer(exe)
        exe.close()
        exe.close()  # twice is fine
        for call in (lambda: exe.parameter_count, lambda: exe.describe(),
                     lambda: trainc.Trainer(exe),
                     lambda: trainer.set_eval_executable(exe)):
            with self.assertRaises(trainc.TraincError) as caught:
                call()
            self.assertIn(f"the Executable '{exe.path}' is closed",
                          str(caught.exception))
            self.assertEqual(caught.exception.code, 'failed precondition')
        # A trainer made before keeps its own reference to the program.
        self.assertTrue(math.isfinite(trainer.step(self.batch)['loss']))

    def test_the_executable_file_rewritten_or_truncated_while_training(self):
        # A trainer copies what it needs from the file when it starts: a
        # file rewritten in place (cp, dd, rsync --inplace) with another
        # learning rate, then truncated, changes no loss and faults nothing.
        # (Before: the constants were read from the file's mapping at every
        # step, so the run took the new learning rate, and a read past the
        # new end was SIGBUS.)
        reference = trainc.Trainer(self.exe)
        expected = [reference.step(self.batch)['loss'] for _ in range(STEPS)]
        other = trainc.compile(MODEL, os.path.join(self.dir, 'other.tcx'),
                               train=True, **{**ADAMW, 'lr': 1e-2})
        other.close()
        with open(os.path.join(self.dir, 'other.tcx'), 'rb') as f:
            replacement = f.read()
        self.assertEqual(len(replacement), os.path.getsize(self.exe.path))
        trainer = trainc.Trainer(self.exe)
        losses = [trainer.step(self.batch)['loss']]
        with open(self.exe.path, 'r+b') as f:  # in place, same inode
            f.write(replacement)
        losses.append(trainer.step(self.batch)['loss'])
        os.truncate(self.exe.path, 0)
        losses += [trainer.step(self.batch)['loss'] for _ in range(STEPS - 2)]
        self.assertEqual(losses, expected)

    def test_a_save_into_another_runs_directory_is_refused(self):
        # Another model's checkpoints (untied_tanh: other weights), or newer
        # ones of this model: a save there would make `latest` name it, and
        # that run's resume would refuse the directory or go back.
        run = os.path.join(self.dir, 'run')
        other_exe = trainc.compile(
            MODEL.replace('tied_erf', 'untied_tanh'),
            os.path.join(self.dir, 'other.tcx'), train=True, **ADAMW)
        other = trainc.Trainer(other_exe)
        other.step(tinygpt_batch(other_exe))
        other.save(run)
        before = sorted(os.listdir(run))
        trainer = trainc.Trainer(self.exe)
        trainer.step(self.batch)
        with self.assertRaises(trainc.TraincError) as caught:
            trainer.save(run)
        self.assertIn('holds the checkpoints of another model', str(caught.exception))
        self.assertEqual(sorted(os.listdir(run)), before)
        mine = os.path.join(self.dir, 'mine')
        trainer.step(self.batch)
        trainer.save(mine)  # step 2
        behind = trainc.Trainer(self.exe)
        behind.step(self.batch)
        with self.assertRaises(trainc.TraincError) as caught:
            behind.save(mine)  # step 1
        self.assertIn('holds a newer checkpoint (step-000000000002)',
                      str(caught.exception))
        trainer.step(self.batch)
        trainer.save(mine)  # the run's own next step is fine
        other_exe.close()

    def test_an_output_view_outlives_close_and_stays_read_only(self):
        trainer = trainc.Trainer(self.exe)
        trainer.step(self.batch)
        view = trainer.output('loss', copy=False)
        kept = view.copy()
        trainer.close()
        del trainer
        other = trainc.Trainer(self.exe)  # may reuse freed memory
        other.step({n: v[::-1].copy() for n, v in self.batch.items()})
        np.testing.assert_array_equal(view, kept)
        with self.assertRaises(ValueError):
            view.flags.writeable = True

    def test_a_trainer_no_one_refers_to_is_freed_at_once(self):
        import weakref
        trainer = trainc.Trainer(self.exe)
        trainer.step(self.batch)
        ref = weakref.ref(trainer)
        del trainer
        self.assertIsNone(ref())  # no gc.collect(): no reference cycle

    def test_threads_sharing_a_trainer_take_turns(self):
        import threading
        trainer = trainc.Trainer(self.exe)
        steps, errors = [], []

        def work():
            try:
                for _ in range(10):
                    steps.append(trainer.step(self.batch))
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(sorted(m['step'] for m in steps), list(range(1, 21)))
        self.assertTrue(all(np.isfinite(m['loss']) for m in steps))
        for name, value in trainer.state_dict().items():
            self.assertTrue(np.isfinite(value).all(), name)

    def test_a_restore_that_skips_a_damaged_checkpoint_warns(self):
        trainer = trainc.Trainer(self.exe)
        run = os.path.join(self.dir, 'run')
        trainer.step(self.batch)
        trainer.save(run)
        trainer.step(self.batch)
        trainer.save(run)
        newest = sorted(d for d in os.listdir(run) if d.startswith('step-'))[-1]
        shard = next(f for f in os.listdir(os.path.join(run, newest))
                     if f.endswith('.safetensors'))
        path = os.path.join(run, newest, shard)
        os.truncate(path, os.path.getsize(path) // 2)
        other = trainc.Trainer(self.exe)
        with self.assertWarns(RuntimeWarning):
            note = other.restore(run)
        self.assertEqual(other.step_count, 1)
        self.assertIn(newest, note)
        self.assertIn('truncated', note)

    def test_a_shard_whose_offsets_wrap_around_is_refused(self):
        trainer = trainc.Trainer(self.exe)
        trainer.step(self.batch)
        run = os.path.join(self.dir, 'run')
        trainer.save(run)
        step = next(d for d in os.listdir(run) if d.startswith('step-'))
        shard = next(f for f in os.listdir(os.path.join(run, step))
                     if f.endswith('.safetensors'))
        path = os.path.join(run, step, shard)
        with open(path, 'rb') as f:
            raw = f.read()
        size = int.from_bytes(raw[:8], 'little')
        header = json.loads(raw[8:8 + size])
        tensors = {n: t['data_offsets'] for n, t in header.items()
                   if n != '__metadata__'}
        name = max(tensors, key=lambda n: tensors[n][1] - tensors[n][0])
        length = tensors[name][1] - tensors[name][0]
        room = size + 64  # the longer numbers fit in a padded header
        # data start + begin wraps past 2^64 to `length` bytes before the
        # file's first byte, so start + end wraps to 0: inside the file.
        start = 2 ** 64 - (8 + room) - length
        header[name]['data_offsets'] = [start, start + length]
        text = json.dumps(header, separators=(',', ':')).encode()
        text += b' ' * (room - len(text))
        with open(path, 'wb') as f:
            f.write(room.to_bytes(8, 'little') + text + raw[8 + size:])
        with self.assertRaises(trainc.TraincError) as caught:
            trainc.Trainer(self.exe).restore(run)
        self.assertIn(f"tensor '{name}' ends at byte", str(caught.exception))

    def test_paths_that_are_no_paths_are_refused(self):
        trainer = trainc.Trainer(self.exe)
        with self.assertRaises(trainc.TraincError) as caught:
            trainer.save(os.path.join(self.dir, 'a\0b'))
        self.assertIn('NUL', str(caught.exception))
        # A refused compile leaves no temporary directory behind. The check
        # uses a private temporary directory: other tests running at the same
        # time write their own files to the shared one.
        private = os.path.join(self.dir, 'tmp')
        os.mkdir(private)
        saved, tempfile.tempdir = tempfile.tempdir, private
        try:
            with self.assertRaises(trainc.TraincError):
                trainc.compile(None)
            with self.assertRaises(trainc.CompileError):
                trainc.compile(self.exe.path)  # an executable is no model
        finally:
            tempfile.tempdir = saved
        self.assertEqual(os.listdir(private), [])


class Compiling(unittest.TestCase):
    def test_refused_option_raises_trainc_s_message(self):
        with self.assertRaises(trainc.CompileError) as caught:
            trainc.compile(MODEL, train=True, lr='fast')
        self.assertIn('--lr', str(caught.exception))

    def test_missing_model(self):
        with self.assertRaises(trainc.CompileError) as caught:
            trainc.compile('/nonexistent/model.onnx')
        self.assertIn('/nonexistent/model.onnx', str(caught.exception))

    def test_options_are_the_command_line_s(self):
        self.assertIn('--recompute', trainc.compiler_help())
        exe = trainc.compile(MODEL, train=True, recompute='full',
                             precision='bf16')
        self.assertGreater(exe.parameter_count, 0)
        self.assertIn('tcx', exe.path)
        path = exe.path
        exe.close()
        self.assertFalse(os.path.exists(path))


class JaxBridge(unittest.TestCase):
    def test_gpt_trains_like_jax_grad_and_optax(self):
        import jax
        import optax
        import trainc.jax
        sys.path.insert(0, os.path.join(REPO, 'test', 'Models'))
        import jax_models
        model = jax_models.GPT()
        params = model.init_params(jax.random.key(0))
        batch = model.example_batch(jax.random.key(1))
        trainer = trainc.jax.compile_training(
            model.loss_fn, params, batch, decay_all=True, **ADAMW)
        losses = [trainer.step(batch)['loss'] for _ in range(STEPS)]
        opt = optax.adamw(1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01)
        state, p, expected = opt.init(params), params, []
        for _ in range(STEPS):
            loss, grads = jax.value_and_grad(model.loss_fn)(p, batch)
            expected.append(float(loss))
            updates, state = opt.update(grads, state, p)
            p = optax.apply_updates(p, updates)
        # float32 both: optax's own float32 bias correction drifts ~2e-6
        # from exact arithmetic in 5 steps (test/Models/jax_training.py).
        np.testing.assert_allclose(losses, expected, rtol=1e-5)
        np.testing.assert_allclose(trainer.evaluate(batch),
                                   float(model.loss_fn(p, batch)), rtol=1e-5)
        trained = trainer.params
        self.assertEqual(jax.tree_util.tree_structure(trained),
                         jax.tree_util.tree_structure(params))
        np.testing.assert_allclose(float(model.loss_fn(trained, batch)),
                                   float(model.loss_fn(p, batch)), rtol=1e-5)
        trainer.close()


if __name__ == '__main__':
    unittest.main()
