#!/usr/bin/env python3
"""Choosing the device (trainc-run --device) and checking a device's steps
against the CPU (--verify-steps), on a machine with or without a GPU.

tinygpt (tied_erf, opset 17) is compiled as an AdamW step and trained a few
steps on random bytes. Checked:
- --device auto trains (on the CPU where there is no GPU); cpu gives the
  same losses bit for bit;
- --verify-steps 2 on the CPU prints one "matches the CPU" line for each of
  the first two steps with a relative error of exactly 0 (a CPU twin of a
  CPU trainer: the harness compares like with like), writes the comparison
  into those steps' JSONL records only, and changes no loss;
- --profile's per-op lines add up (instructions, 100%), leaving out the
  first run once there is a second;
- bad values are errors that name them: --verify-steps -1, --device gpu;
- --device cuda without a CUDA driver fails with "no CUDA device" (or says
  the runtime was built without CUDA), and no process here ever loaded the
  CUDA libraries (cuBLASLt and NCCL alone are ~220 MB resident: every
  child's peak stays under 100 MB);
- in a runtime built with CUDA, with a stand-in libcuda.so.1 (an empty
  library, so the driver check passes but CUDA finds no device): --device
  cuda opens libtrainc_cuda.so, whose error comes back through it
  (cudaGetDeviceCount's message), and --device auto falls back to the CPU;
  $TRAINC_CUDA_PLUGIN naming a missing file, another version's library or
  a library that is not trainc's is an error that says which, and no
  other library is tried.
"""
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import tinygpt_harness  # noqa: E402


def main():
    args = tinygpt_harness.parse_args(__doc__)
    failures = []

    def check(cond, what):
        print(('ok: ' if cond else 'FAIL: ') + what)
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as work:
        step = os.path.join(work, 'step.tcx')
        model = os.path.join(args.data_dir, 'tied_erf', 'model_train_opset17.onnx')
        subprocess.run([args.trainc, model, '--train', '--optimizer', 'adamw',
                        '--lr', '1e-3', '-o', step], check=True)
        data = os.path.join(work, 'data.bin')
        with open(data, 'wb') as f:
            f.write(bytes(b & 0x7f for b in os.urandom(20000)))  # vocabulary 128

        def train(*extra, env=None):
            cmd = [args.trainc_run, step, '--data', data, '--data-format', 'bytes',
                   '--steps', '3', '--output-dir', work, *extra]
            return subprocess.run(cmd, capture_output=True, text=True,
                                  env=env, cwd=work)

        def losses(out):
            return [line.split()[3] for line in out.splitlines()
                    if line.startswith('step ') and ' loss ' in line]

        auto = train('--device', 'auto')
        check(auto.returncode == 0 and len(losses(auto.stdout)) == 3,
              '--device auto trains 3 steps')
        cpu = train('--device', 'cpu')
        check(cpu.returncode == 0 and losses(cpu.stdout) == losses(auto.stdout),
              '--device cpu gives the same losses')

        log = os.path.join(work, 'verify.jsonl')
        verified = train('--device', 'cpu', '--verify-steps', '2', '--log-jsonl', log)
        lines = [l for l in verified.stdout.splitlines() if l.startswith('verify: ')]
        check(verified.returncode == 0 and len(lines) == 2 and
              all('matches the CPU' in l and 'relative error 0 ' in l for l in lines),
              '--verify-steps 2: two steps match the CPU exactly: ' + repr(lines))
        check(losses(verified.stdout) == losses(cpu.stdout),
              '--verify-steps changes no loss')
        records = [json.loads(l) for l in open(log)]
        check([('verify_worst' in r) for r in records] == [True, True, False] and
              all(r.get('verify_error', 0) == 0 for r in records),
              'the JSONL records the comparison of the verified steps only')

        # --profile: per-op times whose instruction counts and shares add
        # up, the first run left out once there is a second.
        def profile(out):
            lines = out.splitlines()
            at = [i for i, l in enumerate(lines) if l.startswith('profile: ')]
            if len(at) != 1:
                return None, []
            ops = []
            for l in lines[at[0] + 1:]:
                m = re.match(r'  (\S+) +([0-9.]+) ms +([0-9.]+)% +\((\d+) instructions\)$', l)
                if not m:
                    break
                ops.append((m.group(1), float(m.group(3)), int(m.group(4))))
            return lines[at[0]], ops
        run = train('--device', 'cpu', '--profile')
        header, ops = profile(run.stdout)
        total = int(re.search(r'in (\d+) instructions', header or '').group(1)) if header else -1
        check(run.returncode == 0 and header and 'the first run left out' in header and
              sum(n for _, _, n in ops) == total and
              abs(sum(p for _, p, _ in ops) - 100) < 0.5 and
              any(name == 'dot_general' for name, _, _ in ops),
              '--profile: ops add up to the executable\'s instructions and 100%: '
              + repr(header))
        one = train('--device', 'cpu', '--profile', '--steps', '1')
        header, ops = profile(one.stdout)
        check(one.returncode == 0 and header and 'left out' not in header and ops,
              '--profile of one run keeps it: ' + repr(header))

        bad = train('--verify-steps', '-1')
        check(bad.returncode != 0 and '--verify-steps' in bad.stderr,
              '--verify-steps -1 is an error naming the flag')
        bad = train('--device', 'gpu')
        check(bad.returncode != 0 and "device 'gpu' is not available" in bad.stderr,
              'an unknown device is an error naming it: ' + bad.stderr.strip())

        # No driver here (a GPU machine has one: then this part is moot).
        driver = subprocess.run(['ldconfig', '-p'], capture_output=True, text=True)
        has_driver = 'libcuda.so.1' in driver.stdout
        cuda = train('--device', 'cuda')
        built = 'built without CUDA' not in cuda.stderr
        if not has_driver:
            check(cuda.returncode != 0 and
                  ('no CUDA device' in cuda.stderr or not built),
                  '--device cuda without a driver: ' + cuda.stderr.strip())
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        check(has_driver or peak_mb < 100,
              f'no process loaded the CUDA libraries (peak {peak_mb:.0f} MB)')

        cc = shutil.which('cc') or shutil.which('gcc')
        if built and not has_driver and cc:
            fake = os.path.join(work, 'fake-driver')
            os.makedirs(fake)
            empty = os.path.join(work, 'empty.c')
            open(empty, 'w').write('int trainc_fake_driver;\n')
            subprocess.run([cc, '-shared', '-fPIC', empty, '-o',
                            os.path.join(fake, 'libcuda.so.1')], check=True)
            env = dict(os.environ, LD_LIBRARY_PATH=fake)
            cuda = train('--device', 'cuda', env=env)
            check(cuda.returncode != 0 and 'cudaGetDeviceCount' in cuda.stderr,
                  'with a driver library, --device cuda loads libtrainc_cuda.so: '
                  + cuda.stderr.strip())
            auto = train('--device', 'auto', env=env)
            check(auto.returncode == 0 and losses(auto.stdout) == losses(cpu.stdout),
                  'with a driver library but no GPU, --device auto trains on the CPU')
            # $TRAINC_CUDA_PLUGIN is the only library tried, and each way
            # it can be wrong is named.
            plugins = {'missing.so': None,
                       'other_version.so': 'int trainc_cuda_plugin_abi(void) { return 1; }\n',
                       'not_trainc.so': 'int unrelated;\n'}
            expected = {'missing.so': 'No such file',
                        'other_version.so': 'built by another version of trainc (1, this '
                                            'trainc needs',
                        'not_trainc.so': 'not a trainc CUDA device library'}
            for name, source in plugins.items():
                path = os.path.join(work, name)
                if source:
                    src = os.path.join(work, name + '.c')
                    open(src, 'w').write(source)
                    subprocess.run([cc, '-shared', '-fPIC', src, '-o', path], check=True)
                cuda = train('--device', 'cuda',
                             env=dict(env, TRAINC_CUDA_PLUGIN=path))
                check(cuda.returncode != 0 and '$TRAINC_CUDA_PLUGIN' in cuda.stderr and
                      path in cuda.stderr and expected[name] in cuda.stderr and
                      'libtrainc_cuda.so:' not in cuda.stderr,
                      f'TRAINC_CUDA_PLUGIN={name} is an error naming it, and no other '
                      'library is tried: ' + cuda.stderr.strip())
        elif not built:
            print('note: this runtime was built without CUDA: the library part is not run')

    print('FAILED: ' + '; '.join(failures) if failures else 'all checks passed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
