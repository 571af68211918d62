#!/usr/bin/env python3
"""Fault injection: checkpoints survive kill -9, signals, a full disk, bit
flips and a second run, and resumed runs end bitwise equal to one that was
never interrupted.

tinygpt (tied_erf, opset 17) trains 40 AdamW steps on a fixed text with
--save-state D --save-every 4 --keep-last 2. The reference run is
uninterrupted. TRAINC_TEST_CHECKPOINT_DELAY_MS=25 holds each save open
between its shard and its manifest, so that random kills land inside saves
as well as inside steps.

- kill -9: runs killed up to 4 times each at uniformly random moments and
  resumed from D until they finish (20 kills). After every kill the newest
  checkpoint must verify and be at most 2 x --save-every steps behind the
  last logged step (checkpoints are written in the background: while one is
  written, up to --save-every more steps run); the finished run's final
  checkpoint and weights (safetensors) must equal the
  reference's bit for bit, and its JSONL log must hold each step once with
  the reference's loss.
- SIGINT and SIGTERM: 5 each at random moments: exit 130 / 143 with a
  checkpoint of the step it stopped at; resumed, the run ends bitwise equal.
- A full disk (a tmpfs that fits one checkpoint, in a user and mount
  namespace): the second save fails with an error naming the path and "No
  space left on device"; the first checkpoint is intact and resumes. A
  directory too small for one checkpoint is refused before training.
- A read-only filesystem (a tmpfs mounted ro, the same way) under
  --output-dir, --save-state, --save-safetensors and --log-jsonl: each
  refused before training, naming the path and "Read-only file system".
- A flipped bit in the newest checkpoint's shard, then in its manifest: the
  resume warns and uses the previous checkpoint.
- Two runs on one directory: the second is refused, naming the first's pid;
  a run writing another's JSONL log is refused too.
- trainc-run --supervise: its training process is killed 3 times; the
  supervisor restarts it from the newest checkpoint each time, and the run
  ends bitwise equal to the uninterrupted one. A SIGINT to the supervised
  run's whole process group (a terminal's Ctrl-C) saves the step it stopped
  at. A run refused at start (missing data) is not restarted, and a fresh
  run into a directory holding a run's checkpoints is refused. A
  supervisor killed outright (SIGKILL) takes its run with it: the kernel
  sends the run SIGTERM, which saves the step it stopped at and releases
  the directory, and a resume ends at the reference.

Prints one line per check; exits 1 on any failure.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

STEPS, SAVE_EVERY = 40, 4
DELAY_MS = '25'
SHARD = 'rank-00000-of-00001.safetensors'


class Run:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.exe = os.path.join(work, 'step.tcx')
        self.text = os.path.join(work, 'text.txt')

    def command(self, state, log, steps, weights, resume, save=True):
        cmd = [self.args.trainc_run, self.exe, '--data', self.text, '--steps', str(steps),
               '--no-progress', '--log-every', '1000', '--log-jsonl', log,
               '--save-safetensors', weights]
        if save:
            cmd += ['--save-state', state, '--save-every', str(SAVE_EVERY), '--keep-last', '2']
        if resume:
            cmd += ['--resume', state]
        return cmd

    def start(self, state, log, steps, weights, resume):
        env = dict(os.environ, TRAINC_TEST_CHECKPOINT_DELAY_MS=DELAY_MS)
        return subprocess.Popen(self.command(state, log, steps, weights, resume), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def saved_step(state):
    """The step of DIR/latest's checkpoint (0 when there is none)."""
    try:
        name = open(os.path.join(state, 'latest')).read().strip()
        return json.load(open(os.path.join(state, name, 'manifest.json')))['step']
    except FileNotFoundError:
        return 0


def log_records(log):
    if not os.path.exists(log):
        return []
    return [json.loads(line) for line in open(log) if line.strip()]


def same_file(a, b):
    return open(a, 'rb').read() == open(b, 'rb').read()


def final_shard(state):
    return os.path.join(state, f'step-{STEPS:012d}', SHARD)


def check_finished(tag, run_dir, ref):
    """The interrupted run's final checkpoint (weights and optimizer state),
    weights file and log against the reference."""
    problems = []
    if not same_file(final_shard(os.path.join(run_dir, 'state')), ref['shard']):
        problems.append('the final checkpoint differs from the uninterrupted run\'s')
    weights = os.path.join(run_dir, 'w.safetensors')
    # A kill after the last checkpoint may come before the weights file.
    if os.path.exists(weights) and not same_file(weights, ref['weights']):
        problems.append('weights differ from the uninterrupted run')
    records = log_records(os.path.join(run_dir, 'log.jsonl'))
    steps = [r['step'] for r in records]
    if steps != list(range(1, STEPS + 1)):
        problems.append(f'the log holds steps {steps}, expected 1..{STEPS} once each')
    elif [r['loss'] for r in records] != ref['losses']:
        problems.append('the logged losses differ from the uninterrupted run')
    print(f'{tag}: {"ok" if not problems else "; ".join(problems)}')
    return not problems


def interrupted_run(run, ref, tag, kills, sig, rng):
    """Runs to the end, delivering up to `kills` signals `sig`, each at a
    uniformly random moment of the time the rest of the run should take;
    returns (every check passed, signals delivered)."""
    run_dir = os.path.join(run.work, tag)
    os.makedirs(run_dir)
    state, log = os.path.join(run_dir, 'state'), os.path.join(run_dir, 'log.jsonl')
    weights = os.path.join(run_dir, 'w.safetensors')
    ok, delivered = True, 0
    while True:
        done = saved_step(state)
        proc = run.start(state, log, STEPS - done, weights, resume=done > 0)
        if delivered < kills:
            left = ref['startup'] + ref['per_step'] * (STEPS - done)
            time.sleep(rng.uniform(0.0, left))
            if proc.poll() is None:
                proc.send_signal(sig)
                delivered += 1
        out, err = proc.communicate()
        after = saved_step(state)
        if proc.returncode == 0 or after == STEPS:
            # Finished (a signal after the last step may still stop it).
            if after != STEPS:
                print(f'{tag}: finished, but the last checkpoint is step {after}')
                return False, delivered
            break
        expected = {signal.SIGKILL: -9, signal.SIGINT: 130, signal.SIGTERM: 143}[sig]
        logged_now = max([r['step'] for r in log_records(log)], default=0)
        # A signal that comes before the process has set up its handlers
        # (while it is being loaded) ends it by default: nothing had run.
        if proc.returncode == -int(sig) and after == done and logged_now <= done:
            continue
        if proc.returncode != expected:
            print(f'{tag}: exit {proc.returncode} after {sig.name}, expected {expected}: '
                  f'{err.strip()[-300:]}')
            return False, delivered
        logged = max([r['step'] for r in log_records(log)], default=0)
        if after < done:
            print(f'{tag}: the newest checkpoint went back from step {done} to {after}')
            ok = False
        # Checkpoints are written in the background: one counts once it is on
        # disk, and while it is written up to --save-every more steps run.
        if sig == signal.SIGKILL and logged - after > 2 * SAVE_EVERY:
            print(f'{tag}: killed at step {logged} with the newest checkpoint at {after}: '
                  f'{logged - after} steps lost, more than --save-every {SAVE_EVERY} plus '
                  f'the steps run while a checkpoint is written')
            ok = False
        if sig != signal.SIGKILL and after != logged:
            print(f'{tag}: stopped by {sig.name} after step {logged}, but the newest '
                  f'checkpoint is step {after}')
            ok = False
    return check_finished(f'{tag} ({delivered} x {sig.name})', run_dir, ref) and ok, \
        delivered


def full_disk(run):
    """A tmpfs that holds one checkpoint: the second save fails cleanly and
    the first resumes."""
    d = os.path.join(run.work, 'fulldisk')
    os.makedirs(d)
    state = os.path.join(d, 'state')
    os.makedirs(state)
    one = run.command(state, os.path.join(d, 'log.jsonl'), 8, os.path.join(d, 'w.safetensors'),
                      False)
    two = run.command(state, os.path.join(d, 'log2.jsonl'), 1, os.path.join(d, 'w2.safetensors'),
                      True, save=False)
    # 1.3 MB per checkpoint: 2000k fits one, not two.
    script = ('mount -t tmpfs -o size=2000k tmpfs "$0" || exit 99; '
              '"$@" > "$0.out1" 2>&1; echo "first=$?"; '
              'ls "$0" > "$0.ls"; ')
    script += ' '.join(f"'{a}'" for a in two) + ' > "$0.out2" 2>&1; echo "second=$?"; '
    # A directory that cannot hold even one checkpoint: refused before training.
    three = run.command(state + '/small', os.path.join(d, 'log3.jsonl'), 1,
                        os.path.join(d, 'w3.safetensors'), False)
    script += ('mkdir -p "$0/small" && mount -t tmpfs -o size=100k tmpfs "$0/small"; ' +
               ' '.join(f"'{a}'" for a in three) + ' > "$0.out3" 2>&1; echo "third=$?"')
    env = dict(os.environ, TRAINC_TEST_CHECKPOINT_DELAY_MS='0')
    proc = subprocess.run(['unshare', '-rm', 'sh', '-c', script, state, *one],
                          capture_output=True, text=True, env=env)
    if 'first=' not in proc.stdout:
        print(f'full disk: cannot make a tmpfs in a mount namespace '
              f'(unshare -rm: {proc.stderr.strip()}): FAILED')
        return False
    first = open(state + '.out1').read()
    second = open(state + '.out2').read()
    if os.environ.get('CHECKPOINT_FAULTS_VERBOSE'):
        print(proc.stdout, first, second, sep='\n---\n')
    third = open(state + '.out3').read()
    ok = ('third=1' in proc.stdout and 'bytes free, but one checkpoint needs about' in third and
          'step 1' not in third and
          'first=1' in proc.stdout and 'No space left on device' in first and
          'the previous checkpoint is intact' in first and
          'checkpoints: 1 during training' in first and 'second=0' in proc.stdout and
          'resumed: ' in second and 'step-000000000004 at step 4' in second)
    print(f'full disk: {"ok" if ok else "FAILED"} (second save: '
          f'{[l for l in first.splitlines() if "error" in l][:1]}; resume: '
          f'{[l for l in second.splitlines() if l.startswith("resumed")][:1]})')
    return ok


def read_only(run):
    """Each path trainc-run writes, on a read-only filesystem (a tmpfs
    mounted ro in a user and mount namespace): refused before training
    with the path and the system's reason, exit 1."""
    d = os.path.join(run.work, 'readonly')
    ro = os.path.join(d, 'ro')
    os.makedirs(ro)

    def cmd(n, state=None, log=None, weights=None, extra=()):
        return run.command(state or os.path.join(d, f'state{n}'),
                           log or os.path.join(d, f'log{n}.jsonl'), 4,
                           weights or os.path.join(d, f'w{n}.safetensors'), False,
                           save=state is not None) + list(extra)
    cases = {
        '--output-dir': (cmd(1, extra=['--output-dir', ro]),
                         f'--output-dir {ro}: cannot write into it: Read-only file system'),
        '--save-state': (cmd(2, state=os.path.join(ro, 'state')),
                         f"--save-state {os.path.join(ro, 'state')}: cannot create the "
                         'directory: Read-only file system'),
        '--save-safetensors': (cmd(3, weights=os.path.join(ro, 'w.safetensors')),
                               f'cannot write into {ro}: Read-only file system'),
        '--log-jsonl': (cmd(4, log=os.path.join(ro, 'l.jsonl')),
                        f"failed precondition: {os.path.join(ro, 'l.jsonl')}: cannot open "
                        'the JSONL log: Read-only file system'),
    }
    ok = True
    for what, (command, wanted) in cases.items():
        proc = subprocess.run(['unshare', '-rm', 'sh', '-c',
                               'mount -t tmpfs -o ro tmpfs "$0" || exit 99; exec "$@"', ro,
                               *command], capture_output=True, text=True)
        if proc.returncode == 99:
            print(f'read-only {what}: cannot mount a read-only tmpfs (unshare -rm: '
                  f'{proc.stderr.strip()[-200:]}): FAILED')
            return False
        good = (proc.returncode == 1 and wanted in proc.stderr and
                'Read-only file system' in proc.stderr and 'step 1' not in proc.stdout)
        print(f'read-only {what}: ' + ('refused: ok' if good else
              f'FAIL (exit {proc.returncode}: {proc.stderr.strip()[-300:]})'))
        ok &= good
    return ok


def bit_flips(run, ref):
    """A flipped bit in the newest checkpoint's shard, then its manifest."""
    ok = True
    for target in (SHARD, 'manifest.json'):
        d = os.path.join(run.work, 'flip_' + target.split('.')[0])
        os.makedirs(d)
        state = os.path.join(d, 'state')
        subprocess.run(run.command(state, os.path.join(d, 'l.jsonl'), 8,
                                   os.path.join(d, 'w.safetensors'), False),
                       check=True, capture_output=True)
        path = os.path.join(state, 'step-000000000008', target)
        data = bytearray(open(path, 'rb').read())
        data[len(data) * 2 // 3] ^= 0x10
        open(path, 'wb').write(data)
        proc = subprocess.run(run.command(state, os.path.join(d, 'l.jsonl'), 1,
                                          os.path.join(d, 'w.safetensors'), True),
                              capture_output=True, text=True)
        good = (proc.returncode == 0 and 'warning: ' in proc.stderr and
                'step-000000000008' in proc.stderr and
                'resumed: ' in proc.stdout and 'step-000000000004 at step 4' in proc.stdout)
        print(f'bit flip in {target}: {"ok" if good else "FAILED"} '
              f'({proc.stderr.strip().splitlines()[:1]})')
        ok &= good
    return ok


def supervised(run, ref, rng):
    """trainc-run --supervise restarts a run whose training process is
    killed three times; it ends bitwise equal to the uninterrupted run."""
    d = os.path.join(run.work, 'supervised')
    os.makedirs(d)
    state = os.path.join(d, 'state')
    cmd = run.command(state, os.path.join(d, 'log.jsonl'), STEPS,
                      os.path.join(d, 'w.safetensors'), False) + ['--supervise']
    # Saves held open 100 ms: the run lasts over a second, so that three
    # kills come before it ends even on a loaded machine.
    env = dict(os.environ, TRAINC_TEST_CHECKPOINT_DELAY_MS='100',
               TRAINC_TEST_SUPERVISOR_NO_BACKOFF='1')
    sup = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    kills = 0
    children = f'/proc/{sup.pid}/task/{sup.pid}/children'
    while kills < 3 and sup.poll() is None:
        time.sleep(rng.uniform(0.05, 0.25))
        try:
            pids = open(children).read().split()
        except FileNotFoundError:
            break
        if pids:
            os.kill(int(pids[0]), signal.SIGKILL)
            kills += 1
    out, err = sup.communicate()
    restarts = err.count('supervisor: the run was killed by signal 9')
    good = sup.returncode == 0 and kills == 3 and restarts == 3
    if not good:
        print(f'supervised: exit {sup.returncode}, {kills} kills, {restarts} restarts '
              f'reported: {err.strip()[-400:]}')
        return False
    return check_finished(f'supervised ({kills} x SIGKILL of the training process)', d, ref)


def supervised_stops(run, ref):
    """A supervised run stopped by a Ctrl-C to its whole process group
    (the child gets the signal from the terminal and from the supervisor)
    saves the step it stopped at, and resumes to the reference; a run
    refused at start is not restarted; a fresh run into a directory holding
    another run's checkpoints is refused, supervised or not."""
    d = os.path.join(run.work, 'supervised_stops')
    os.makedirs(d)
    state = os.path.join(d, 'state')
    env = dict(os.environ, TRAINC_TEST_CHECKPOINT_DELAY_MS='100',
               TRAINC_TEST_SUPERVISOR_NO_BACKOFF='1')
    cmd = run.command(state, os.path.join(d, 'log.jsonl'), STEPS,
                      os.path.join(d, 'w.safetensors'), False) + ['--supervise']
    sup = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, start_new_session=True)
    log = os.path.join(d, 'log.jsonl')
    deadline = time.time() + 60
    while len(log_records(log)) < 2 and sup.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    os.killpg(sup.pid, signal.SIGINT)
    out, err = sup.communicate()
    logged = log_records(log)[-1]['step'] if log_records(log) else 0
    stopped = (sup.returncode == 130 and 'restarting' not in err and logged < STEPS
               and saved_step(state) == logged)
    print(f'supervised, SIGINT to the process group: exit {sup.returncode}, last step '
          f'{logged}, checkpoint at step {saved_step(state)}'
          + ('' if stopped else f' FAIL: {err.strip()[-300:]}'))
    ok = stopped
    if stopped:
        resumed = subprocess.run(
            run.command(state, log, STEPS - logged, os.path.join(d, 'w.safetensors'), True),
            capture_output=True, text=True)
        ok &= resumed.returncode == 0 and check_finished(
            'supervised, SIGINT to the group, resumed', d, ref)
    # The finished directory holds a run's checkpoints: a fresh run there is
    # refused, and under --supervise not restarted.
    for extra in ([], ['--supervise']):
        fresh = subprocess.run(
            run.command(state, os.path.join(d, 'fresh.jsonl'), 4,
                        os.path.join(d, 'fresh.safetensors'), False) + extra,
            capture_output=True, text=True, env=env)
        good = (fresh.returncode == 1 and 'holds the checkpoints of another run '
                f'(the newest at step {STEPS})' in fresh.stderr
                and 'restarting' not in fresh.stderr
                and ('before writing a new checkpoint; not restarted' in fresh.stderr)
                == bool(extra)
                and saved_step(state) == STEPS)
        print(f'a fresh run {" ".join(extra)} into a directory of checkpoints is refused: '
              + ('ok' if good else 'FAIL: ' + fresh.stderr.strip()[-300:]))
        ok &= good
    missing = subprocess.run(
        [a if a != run.text else os.path.join(d, 'missing.txt') for a in cmd[:-1]]
        + ['--save-state', os.path.join(d, 'other'), '--supervise'],
        capture_output=True, text=True, env=env)
    good = (missing.returncode == 1 and 'restarting' not in missing.stderr
            and 'before writing a checkpoint; not restarted' in missing.stderr)
    print('a supervised run with missing data is not restarted: '
          + ('ok' if good else 'FAIL: ' + missing.stderr.strip()[-300:]))
    return ok and good


def supervisor_killed(run, ref):
    """SIGKILL to the supervisor itself: its training process gets SIGTERM
    from the kernel (PR_SET_PDEATHSIG), saves the step it stopped at and
    exits, leaving nothing training and the directory unlocked; a resume
    ends bitwise at the reference."""
    d = os.path.join(run.work, 'supervisor_killed')
    os.makedirs(d)
    state, log = os.path.join(d, 'state'), os.path.join(d, 'log.jsonl')
    env = dict(os.environ, TRAINC_TEST_CHECKPOINT_DELAY_MS='100',
               TRAINC_TEST_SUPERVISOR_NO_BACKOFF='1')
    cmd = run.command(state, log, STEPS, os.path.join(d, 'w.safetensors'),
                      False) + ['--supervise']
    # Output to a file, not a pipe: the orphaned run would hold a pipe open.
    with open(os.path.join(d, 'output.txt'), 'w') as output:
        sup = subprocess.Popen(cmd, env=env, stdout=output, stderr=output)
    deadline = time.time() + 60
    while len(log_records(log)) < 2 and sup.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    try:
        child = int(open(f'/proc/{sup.pid}/task/{sup.pid}/children').read().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        child = None
    sup.kill()
    sup.wait()

    def running(pid):  # not gone, and no zombie waiting for init
        try:
            with open(f'/proc/{pid}/stat') as f:
                return f.read().split()[2] != 'Z'
        except FileNotFoundError:
            return False

    # The orphan must stop on its own (it saves first).
    deadline = time.time() + 60
    while child is not None and running(child) and time.time() < deadline:
        time.sleep(0.05)
    gone = child is not None and not running(child)
    logged = log_records(log)[-1]['step'] if log_records(log) else 0
    stopped = gone and 0 < logged < STEPS and saved_step(state) == logged
    print(f'supervisor killed with SIGKILL: its run stopped '
          f'{"by itself" if gone else "NOT"}, last step {logged}, checkpoint at '
          f'step {saved_step(state)}' + ('' if stopped else ' FAIL'))
    if not stopped:
        if child is not None and running(child):
            os.kill(child, signal.SIGKILL)
        return False
    resumed = subprocess.run(
        run.command(state, log, STEPS - logged, os.path.join(d, 'w.safetensors'), True),
        capture_output=True, text=True)
    return resumed.returncode == 0 and check_finished(
        'supervisor killed, resumed', d, ref)


def two_runs(run):
    d = os.path.join(run.work, 'shared')
    os.makedirs(d)
    state = os.path.join(d, 'state')
    env = dict(os.environ, TRAINC_TEST_CHECKPOINT_DELAY_MS='200')
    first = subprocess.Popen(run.command(state, os.path.join(d, 'a.jsonl'), STEPS,
                                         os.path.join(d, 'a.safetensors'), False),
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The lock is held once its file names the holder's pid.
    deadline, lock = time.time() + 30, os.path.join(state, 'lock')

    def holder():
        try:
            return open(lock).read().strip()
        except FileNotFoundError:
            return ''
    while holder() != str(first.pid) and time.time() < deadline:
        time.sleep(0.01)
    second = subprocess.run(run.command(state, os.path.join(d, 'b.jsonl'), STEPS,
                                        os.path.join(d, 'b.safetensors'), False),
                            capture_output=True, text=True)
    # Another run with its own directory but the first's JSONL log: refused
    # (rewriting the log would drop the first run's records).
    logged = len(log_records(os.path.join(d, 'a.jsonl')))
    third = subprocess.run(run.command(os.path.join(d, 'state3'), os.path.join(d, 'a.jsonl'),
                                       STEPS, os.path.join(d, 'c.safetensors'), False),
                           capture_output=True, text=True)
    still = first.poll() is None
    first.kill()
    first.communicate()
    good = (second.returncode == 1 and f'is in use by another run (pid {first.pid})'
            in second.stderr)
    print(f'two runs on one directory: {"ok" if good else "FAILED"} '
          f'({second.stderr.strip()[:200]})')
    shared_log = (third.returncode == 1 and 'another run is writing this JSONL log'
                  in third.stderr and len(log_records(os.path.join(d, 'a.jsonl'))) >= logged)
    print(f'two runs on one log: {"ok" if shared_log else "FAILED"} (the first still '
          f'running: {still}; {third.stderr.strip()[:200]})')
    return good and shared_log and still


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trainc', required=True)
    parser.add_argument('--trainc-run', required=True)
    parser.add_argument('--model', required=True, help='tinygpt model_train_opset17.onnx')
    parser.add_argument('--seed', type=int, default=0, help='seed of the kill times')
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as work:
        run = Run(args, work)
        subprocess.run([args.trainc, args.model, '--train', '--optimizer', 'adamw', '--lr',
                        '1e-3', '-o', run.exe], check=True)
        text_rng = random.Random(1)
        open(run.text, 'w').write(''.join(text_rng.choice('abcdefghij klmnop\n')
                                          for _ in range(20000)))
        ref_dir = os.path.join(work, 'ref')
        os.makedirs(ref_dir)
        start = time.time()
        proc = run.start(os.path.join(ref_dir, 'state'), os.path.join(ref_dir, 'log.jsonl'),
                         STEPS, os.path.join(ref_dir, 'w.safetensors'), False)
        proc.communicate()
        seconds = time.time() - start
        ref = {'seconds': seconds, 'startup': 0.05, 'per_step': seconds / STEPS,
               'weights': os.path.join(ref_dir, 'w.safetensors'),
               'shard': final_shard(os.path.join(ref_dir, 'state')),
               'losses': [r['loss'] for r in log_records(os.path.join(ref_dir, 'log.jsonl'))]}
        if proc.returncode != 0 or len(ref['losses']) != STEPS:
            print('the reference run failed')
            return 1
        print(f'reference: {STEPS} steps with a checkpoint every {SAVE_EVERY} in '
              f'{ref["seconds"]:.2f} s; kills land uniformly in that time')
        ok = True
        for sig, wanted, per_run in ((signal.SIGKILL, 20, 4), (signal.SIGINT, 5, 1),
                                     (signal.SIGTERM, 5, 1)):
            delivered = 0
            for trial in range(4 * wanted):
                if delivered >= wanted:
                    break
                good, n = interrupted_run(run, ref, f'{sig.name.lower()}_{trial}',
                                          min(per_run, wanted - delivered), sig, rng)
                ok &= good
                delivered += n
            print(f'{sig.name}: {delivered} delivered at random moments')
            ok &= delivered >= wanted
        ok &= supervised(run, ref, rng)
        ok &= supervised_stops(run, ref)
        ok &= supervisor_killed(run, ref)
        ok &= full_disk(run)
        ok &= read_only(run)
        ok &= bit_flips(run, ref)
        ok &= two_runs(run)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
