"""What the framework bridges' trainers share (trainc.jax, trainc.torch).

A bridge trainer owns the directory its exported model and executables live
in, a trainc.Trainer of the training step, and the forward executable that
`evaluate` compiles on first use. Subclasses turn the framework's batch
into named inputs (`_inputs`) and say how to compile the forward
executable (`_compile_forward`).
"""
from __future__ import annotations

import shutil
from typing import Any, Dict

from . import Executable, Trainer


class BridgeTrainer:
    def __init__(self, executable: Executable, workdir: str):
        self.executable = executable
        self.trainer = Trainer(executable)
        self._workdir = workdir

    def _inputs(self, batch: Any) -> Dict[str, Any]:
        raise NotImplementedError

    def _compile_forward(self) -> Executable:
        raise NotImplementedError

    def step(self, batch: Any) -> Dict[str, Any]:
        """One training step; the step's metrics (see trainc.Trainer.step)."""
        return self.trainer.step(self._inputs(batch))

    def evaluate(self, batch: Any) -> float:
        """The loss on `batch` with the current parameters, run by trainc
        (the forward executable is compiled on first use)."""
        if self.trainer.eval_executable is None:
            self.trainer.set_eval_executable(self._compile_forward())
        return self.trainer.evaluate(self._inputs(batch))

    def save(self, directory: str) -> None:
        """Checkpoints the run (trainc.Trainer.save)."""
        self.trainer.save(directory)

    def restore(self, directory: str) -> None:
        """Continues a saved run (trainc.Trainer.restore)."""
        self.trainer.restore(directory)

    def close(self) -> None:
        """Releases the trainer and executables and deletes their files."""
        self.trainer.close()
        self.executable.close()
        if self.trainer.eval_executable is not None:
            self.trainer.eval_executable.close()
        shutil.rmtree(self._workdir, ignore_errors=True)
