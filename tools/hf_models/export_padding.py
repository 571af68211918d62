#!/usr/bin/env python3
"""Export Hugging Face decoders given a padding attention mask, trained on
every position, padding included.

    /tmp/oracle/bin/python tools/hf_models/export_padding.py test/Models/hf_padding

A causal LM given an attention_mask adds causal and padding in one
[B, 1, S, S] term of 0 and finfo.min. A left-padded sequence's first
queries see nothing but padding: every key they may see carries the fill,
so their softmax is uniform. Where the loss reads those positions too
(labels = input_ids, as users write them without masking the padding to
-100), their gradients count, and a log-sum-exp kept in float32 loses
them (max + log(sum) rounds to the max). trainc's first step must match
PyTorch's there (test/Frontends/Onnx/hf_padding.test): batch 0 is
left-padded by 4, batch 1 right-padded by 3.

Writes OUT/gpt2_<exporter>.onnx for models.py's GPT-2 (eager attention)
by each exporter, OUT/input_ids.npy and OUT/attention_mask.npy (the labels are
the inputs), and OUT/reference.json: PyTorch's loss and gradient norm of
each model in float64 on that batch (the loss float32, as Hugging Face's
causal-LM loss takes the logits to float32). Not Llama: in float64 its
mask's fills add up to -inf, and PyTorch's own loss is NaN there.

Needs torch, transformers, onnx, onnxscript and onnxruntime
(tools/hf_models/requirements.txt); CI never runs it, the tests read the
committed files.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import models  # noqa: E402

INPUTS = ('input_ids', 'attention_mask', 'labels')


def _batch(gen):
    ids = torch.randint(1, models.VOCAB, (models.BATCH, models.SEQ), generator=gen)
    mask = torch.ones(models.BATCH, models.SEQ, dtype=torch.int64)
    mask[0, :4] = 0
    mask[1, models.SEQ - 3:] = 0
    return {'input_ids': ids, 'attention_mask': mask, 'labels': ids}


def _eager(build):
    def made():
        model = build()
        model.set_attn_implementation('eager')
        return model
    return made


CASE = models.ModelCase('gpt2', _eager(models._gpt2), INPUTS, _batch, ())


def main():
    out = export.output_directory(__doc__, 'test/Models/hf_padding')
    os.makedirs(out, exist_ok=True)
    batch = _batch(torch.Generator().manual_seed(1))
    for name in ('input_ids', 'attention_mask'):
        np.save(os.path.join(out, f'{name}.npy'), batch[name].numpy())
    export.write_first_step_references(out, [(CASE, ('ts17', 'dynamo'))], batch)


if __name__ == '__main__':
    main()
