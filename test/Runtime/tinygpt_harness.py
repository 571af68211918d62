"""Shared command line and variant loop of the tinygpt reference tests.

Every such test takes --trainc, --trainc-run and --data-dir (shared/data/
tinygpt); most check each variant (tied_erf, untied_tanh) at opsets 14 and 17.
"""
import argparse
import os
import tempfile

VARIANTS = ('tied_erf', 'untied_tanh')
OPSETS = (14, 17)


def parse_args(doc):
    """The tools and data directory, with the test's docstring as --help."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument('--trainc', required=True)
    parser.add_argument('--trainc-run', required=True)
    parser.add_argument('--data-dir', required=True, help='shared/data/tinygpt')
    return parser.parse_args()


def load_checkpoint(directory):
    """The tensors of the newest checkpoint of a --save-state directory
    (DIR/latest names it; its rank-0 shard is a safetensors file)."""
    from safetensors.numpy import load_file
    with open(os.path.join(directory, 'latest')) as f:
        name = f.read().strip()
    return load_file(os.path.join(directory, name, 'rank-00000-of-00001.safetensors'))


def check_every_variant(args, check):
    """Runs check(variant_dir, opset, work) for every variant and opset (all of
    them, so one failure does not hide another) in a scratch directory;
    returns the exit status: 0 when every check returned True."""
    ok = True
    with tempfile.TemporaryDirectory() as work:
        for variant in VARIANTS:
            for opset in OPSETS:
                ok &= check(os.path.join(args.data_dir, variant), opset, work)
    return 0 if ok else 1
