"""JAX models for the StableHLO frontend's tests, in plain jax.numpy.

Each model is a class used as a namespace (no instances; BertEncoder, a
BERT-base-sized forward-only case, is instantiated with its sizes) with

    init_params(key) -> params        a pytree of float32 arrays
    example_batch(key) -> batch       a dict of arrays
    loss_fn(params, batch) -> loss    a float scalar

so that `tools/jax_export.py test/Models/jax_models.py:GPT.loss_fn
--params-fn test/Models/jax_models.py:GPT.init_params --batch-fn
test/Models/jax_models.py:GPT.example_batch -o out/gpt` exports it, and
test/Models/jax_training.py trains it through trainc.

The loss functions keep the dtype of `params` (no float32 constants forced
in), so the same code computes the float64 reference gradients under
`jax.enable_x64(True)` with the parameters cast to float64.

No flax here: the point is the StableHLO that ordinary jax.numpy code
lowers to (gathers from indexing and take_along_axis, dot_general,
reduce, iota-built masks, select). EinsumGPT writes its LayerNorm as
flax.linen.LayerNorm computes it and calls optax's cross-entropy (optax
is in the test requirements), the forms Flax models bring.
"""
import math

import jax
import jax.numpy as jnp


def next_token_nll(logits, targets):
    """Mean softmax cross-entropy of `logits` [b, s, v] at `targets` [b, s]
    (the loss of the language models below)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    return jnp.mean(nll)


class GPT:
    """A pre-LayerNorm GPT: 2 layers, d_model 32, 4 heads, vocab 64, seq 16.

        x = wte[tokens] + wpe[0..seq-1]
        per block:  x = x + attn(ln1(x));  x = x + mlp(ln2(x))
        logits = ln_f(x) @ lm_head                 (untied head, no bias)
        loss = mean over batch*seq of -log_softmax(logits)[target]

    Attention is causal multi-head self-attention from one fused projection
    `wqkv` [d, 3d] (so no parameter has an exactly zero gradient: the key
    bias, which softmax cancels, is a slice of `bqkv`), the mask built with
    jnp.tril and applied with jnp.where(mask, scores, -inf), and
    jax.nn.softmax. The MLP is [d, 4d] -> jax.nn.gelu(approximate=True) ->
    [4d, d]. LayerNorm has scale and bias and eps 1e-5.

    Parameter names as tools/jax_export.py writes them: params['wte'],
    params['wpe'], params['blocks'][i]['attn']['wqkv'],
    params['blocks'][i]['ln1']['scale'], ..., params['ln_f']['bias'],
    params['lm_head']. The batch is {'tokens', 'targets'}, int32 [2, 16].
    """
    VOCAB = 64
    D_MODEL = 32
    HEADS = 4
    LAYERS = 2
    SEQ = 16
    BATCH = 2
    LN_EPS = 1e-5

    @staticmethod
    def init_params(key):
        """Random float32 parameters.

        Matrices ~ N(0, 1/fan_in), embeddings ~ N(0, 0.5^2), LayerNorm
        scales 1 + N(0, 0.1^2) and all biases N(0, 0.1^2): larger and less
        symmetric than a real initialization, so that attention is far from
        uniform and every parameter's gradient is well away from zero.
        """
        d, v, s = GPT.D_MODEL, GPT.VOCAB, GPT.SEQ
        keys = iter(jax.random.split(key, 64))

        def normal(shape, std):
            return std * jax.random.normal(next(keys), shape, jnp.float32)

        def matrix(n_in, n_out):
            return normal((n_in, n_out), n_in ** -0.5)

        def layer_norm():
            return {'scale': 1.0 + normal((d,), 0.1), 'bias': normal((d,), 0.1)}

        blocks = []
        for _ in range(GPT.LAYERS):
            blocks.append({
                'ln1': layer_norm(),
                'attn': {'wqkv': matrix(d, 3 * d), 'bqkv': normal((3 * d,), 0.1),
                         'wo': matrix(d, d), 'bo': normal((d,), 0.1)},
                'ln2': layer_norm(),
                'mlp': {'w1': matrix(d, 4 * d), 'b1': normal((4 * d,), 0.1),
                        'w2': matrix(4 * d, d), 'b2': normal((d,), 0.1)},
            })
        return {'wte': normal((v, d), 0.5), 'wpe': normal((s, d), 0.5),
                'blocks': blocks, 'ln_f': layer_norm(), 'lm_head': matrix(d, v)}

    @staticmethod
    def example_batch(key):
        """Random int32 tokens [batch, seq] and their next tokens as targets."""
        ids = jax.random.randint(key, (GPT.BATCH, GPT.SEQ + 1), 0, GPT.VOCAB, jnp.int32)
        return {'tokens': ids[:, :-1], 'targets': ids[:, 1:]}

    @staticmethod
    def layer_norm(x, p):
        """LayerNorm over the last axis with scale and bias."""
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + GPT.LN_EPS) * p['scale'] + p['bias']

    @staticmethod
    def attention(x, p):
        """Causal multi-head self-attention; x is [batch, seq, d]."""
        b, s, d = x.shape
        h = GPT.HEADS
        qkv = x @ p['wqkv'] + p['bqkv']
        q, k, v = jnp.split(qkv, 3, axis=-1)

        def heads(t):  # [b, s, d] -> [b, h, s, d/h]
            return t.reshape(b, s, h, d // h).transpose(0, 2, 1, 3)

        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // h)
        causal = jnp.tril(jnp.ones((s, s), dtype=bool))
        scores = jnp.where(causal, scores, -jnp.inf)
        out = jax.nn.softmax(scores, axis=-1) @ v
        out = out.transpose(0, 2, 1, 3).reshape(b, s, d)
        return out @ p['wo'] + p['bo']

    @staticmethod
    def mlp(x, p):
        """Two linear layers with tanh-approximated GELU between them."""
        return jax.nn.gelu(x @ p['w1'] + p['b1'], approximate=True) @ p['w2'] + p['b2']

    @staticmethod
    def loss_fn(params, batch):
        """Mean next-token softmax cross-entropy over all batch * seq positions."""
        return GPT.loss_with(params, batch, GPT.attention)

    @staticmethod
    def loss_with(params, batch, attention, layer_norm=None, nll=next_token_nll):
        """loss_fn with `attention(x, p)` as each block's attention, and
        `layer_norm(x, p)` and `nll(logits, targets)` in place of GPT's."""
        layer_norm = layer_norm or GPT.layer_norm
        tokens = batch['tokens']
        x = params['wte'][tokens] + params['wpe'][jnp.arange(tokens.shape[1])]
        for block in params['blocks']:
            x = x + attention(layer_norm(x, block['ln1']), block['attn'])
            x = x + GPT.mlp(layer_norm(x, block['ln2']), block['mlp'])
        logits = layer_norm(x, params['ln_f']) @ params['lm_head']
        return nll(logits, batch['targets'])


class MLP:
    """A regression MLP: 16 inputs -> 32 relu -> 32 tanh -> 4 outputs, MSE.

    The parameters are a list of layers, so their names are params[0]['w'],
    params[0]['b'], ..., params[2]['b']. The batch is {'x': float32 [8, 16],
    'y': float32 [8, 4]}, y a fixed smooth function of x plus noise.
    """
    SIZES = (16, 32, 32, 4)
    BATCH = 8

    @staticmethod
    def init_params(key):
        """Weights ~ N(0, 1/fan_in), biases ~ N(0, 0.1^2), float32."""
        keys = jax.random.split(key, 2 * (len(MLP.SIZES) - 1))
        return [{'w': jax.random.normal(keys[2 * i], (n_in, n_out), jnp.float32) * n_in ** -0.5,
                 'b': 0.1 * jax.random.normal(keys[2 * i + 1], (n_out,), jnp.float32)}
                for i, (n_in, n_out) in enumerate(zip(MLP.SIZES[:-1], MLP.SIZES[1:]))]

    @staticmethod
    def example_batch(key):
        """Inputs ~ N(0, 1); targets sin of a fixed projection plus noise."""
        kx, kp, kn = jax.random.split(key, 3)
        x = jax.random.normal(kx, (MLP.BATCH, MLP.SIZES[0]), jnp.float32)
        proj = jax.random.normal(kp, (MLP.SIZES[0], MLP.SIZES[-1]), jnp.float32)
        y = jnp.sin(x @ proj / 4.0) + 0.1 * jax.random.normal(kn, (MLP.BATCH, MLP.SIZES[-1]))
        return {'x': x, 'y': y.astype(jnp.float32)}

    @staticmethod
    def loss_fn(params, batch):
        """Mean squared error of the network's output against batch['y']."""
        h = batch['x']
        for i, layer in enumerate(params):
            h = h @ layer['w'] + layer['b']
            if i == 0:
                h = jax.nn.relu(h)
            elif i < len(params) - 1:
                h = jnp.tanh(h)
        return jnp.mean(jnp.square(h - batch['y']))


class DropoutMLP:
    """MLP's network with dropout (rate 1/4) after both hidden layers, the
    masks drawn inside the loss by jax.random from batch['key'], the two
    uint32 words of a threefry key (a training loop passes a fresh one each
    step), and Gaussian noise (jax.random.normal, std 1/2) added to the
    input. The StableHLO computes threefry2x32 on ui32 (shifts, xor, or and
    wrapping adds, in a while loop) and makes the uniform floats with
    bitcast_convert, so trainc's masks are JAX's only if every bit of that
    is: a wrong mask moves the loss and the gradients by far more than any
    tolerance. The normal draws are erfinv of uniforms: chlo.erf_inv in the
    as_text() form, its polynomial spelled out in the export. The uniforms
    and normals are float32 in the float64 reference too, so both draw the
    same masks and noise.
    Batch {'x', 'y', 'key'}.
    """
    RATE = 0.25
    NOISE = 0.5
    init_params = staticmethod(MLP.init_params)

    @staticmethod
    def example_batch(key):
        batch = MLP.example_batch(key)
        batch['key'] = jax.random.key_data(jax.random.fold_in(key, 7))
        return batch

    @staticmethod
    def loss_fn(params, batch):
        """MLP.loss_fn with input noise and inverted dropout on the hidden
        activations."""
        key = jax.random.wrap_key_data(batch['key'])
        key, draw = jax.random.split(key)
        h = batch['x'] + DropoutMLP.NOISE * jax.random.normal(
            draw, batch['x'].shape, jnp.float32)
        for i, layer in enumerate(params):
            h = h @ layer['w'] + layer['b']
            if i == len(params) - 1:
                break
            h = jax.nn.relu(h) if i == 0 else jnp.tanh(h)
            key, draw = jax.random.split(key)
            keep = jax.random.uniform(draw, h.shape, jnp.float32) >= DropoutMLP.RATE
            h = jnp.where(keep, h / (1 - DropoutMLP.RATE), 0)
        return jnp.mean(jnp.square(h - batch['y']))


class ScanMLP:
    """A residual tanh MLP whose layers are stacked and run by jax.lax.scan
    (the way flax/maxtext models loop over layers): the StableHLO is one
    stablehlo.while over dynamic slices of the stacked weights, which trainc
    unrolls. 4 layers of width 16; batch {'x': [8, 16], 'y': [8, 1]}, MSE.
    """
    LAYERS, WIDTH, BATCH = 4, 16, 8

    @staticmethod
    def init_params(key):
        kw, kb, ko = jax.random.split(key, 3)
        n, d = ScanMLP.LAYERS, ScanMLP.WIDTH
        return {'w': jax.random.normal(kw, (n, d, d), jnp.float32) * d ** -0.5,
                'b': 0.1 * jax.random.normal(kb, (n, d), jnp.float32),
                'out': jax.random.normal(ko, (d, 1), jnp.float32) * d ** -0.5}

    @staticmethod
    def example_batch(key):
        kx, ky = jax.random.split(key)
        x = jax.random.normal(kx, (ScanMLP.BATCH, ScanMLP.WIDTH), jnp.float32)
        y = jnp.sin(x[:, :1]) + 0.1 * jax.random.normal(ky, (ScanMLP.BATCH, 1))
        return {'x': x, 'y': y.astype(jnp.float32)}

    @staticmethod
    def loss_fn(params, batch):
        def layer(h, wb):
            w, b = wb
            return h + jnp.tanh(h @ w + b), None
        h, _ = jax.lax.scan(layer, batch['x'], (params['w'], params['b']))
        return jnp.mean(jnp.square(h @ params['out'] - batch['y']))


class BertEncoder:
    """A BERT-base-sized post-LayerNorm encoder with a tied masked-LM head.

    Unlike GPT and MLP this is instantiated, so tests can make it smaller:
    BertEncoder() is BERT-base (12 layers, d_model 768, 12 heads, FFN 3072,
    vocab 30522, 512 learned positions: 109,512,762 parameters in 201
    tensors) on a batch of 2 x 128 tokens; BertEncoder(layers=2,
    d_model=64, ...) is a small one. init_params, example_batch and loss_fn
    are methods with the signatures of the other models'.

        x = LN_emb(wte[tokens] + wpe[0..seq-1])          (no token types)
        per layer:  x = LN1(x + attn(x, mask));  x = LN2(x + ffn(x))
        h = LN_head(gelu(x @ head.w + head.b))
        logits = h @ wte^T + head.bias_out               (tied to wte)
        loss = sum(mask * nll(logits, targets)) / sum(mask)

    Attention is bidirectional multi-head self-attention with separate q, k,
    v projections, scores / sqrt(head_dim) plus the additive mask
    (1 - mask) * -1e9 over the keys (batch['mask'] is 1 for a real token and
    0 for padding), jax.nn.softmax, and an output projection. The FFN is
    [d, ffn] -> exact (erf) GELU, as BERT's, -> [ffn, d]. LayerNorm eps is
    BERT's 1e-12. Every Linear is `x @ w + b` with w [in, out].

    example_batch: `targets` are random ids; `tokens` are the targets with
    about 15% replaced by [MASK] (id 103); `mask` is 1 on the first `seq`
    positions of row 0 and the first 3/4 of row 1 (int32, [batch, seq]),
    so the loss is the mean next-id cross-entropy over the real positions
    (predicting every position's original id, masked or not).

    Parameter names: params['wte'], params['wpe'], params['ln_emb']['scale'],
    params['layers'][i]['attn']['wq'] ... ['bo'], params['layers'][i]['ln1'],
    params['layers'][i]['ffn']['w1'] ... ['b2'], params['layers'][i]['ln2'],
    params['head']['w'], params['head']['b'], params['head']['ln'],
    params['head']['bias_out'].
    """
    MASK_ID = 103

    def __init__(self, layers=12, d_model=768, heads=12, ffn=3072, vocab=30522,
                 max_positions=512, batch=2, seq=128, ln_eps=1e-12):
        if d_model % heads:
            raise ValueError(f'd_model {d_model} is not a multiple of heads {heads}')
        if seq > max_positions:
            raise ValueError(f'seq {seq} is longer than max_positions {max_positions}')
        self.layers, self.d_model, self.heads, self.ffn = layers, d_model, heads, ffn
        self.vocab, self.max_positions = vocab, max_positions
        self.batch, self.seq, self.ln_eps = batch, seq, ln_eps

    def init_params(self, key):
        """Random float32 parameters, larger and less symmetric than BERT's own.

        Matrices ~ N(0, 1/fan_in), the token embeddings (also the output
        projection) ~ N(0, 0.3^2), the position embeddings N(0, 0.1^2),
        every bias N(0, 0.1^2) and LayerNorm scales 1 + N(0, 0.1^2). Not
        BERT's N(0, 0.02^2) with zero biases: with that the tied head's
        logits are nearly uniform (loss ~ ln(vocab)) and the loss hardly
        depends on the encoder; on 2 layers, scaling every attention output
        by 0.99 moves it by 3.7e-6 relative and ignoring the padding mask in
        attention by 1.2e-4, so comparing losses would check little. With
        these sizes (loss ~35: confidently wrong logits) the same changes
        move it by 1.1e-4 and 2.3e-4, every LayerNorm output scaled by 1.001
        by 9.7e-4 (BERT's init: 3.1e-5); the tanh GELU for the exact one
        stays below 3e-6 with either.
        """
        d, f = self.d_model, self.ffn
        keys = iter(jax.random.split(key, 20 * self.layers + 16))

        def normal(shape, std):
            return std * jax.random.normal(next(keys), shape, jnp.float32)

        def matrix(n_in, n_out):
            return normal((n_in, n_out), n_in ** -0.5)

        def bias(n):
            return normal((n,), 0.1)

        def layer_norm():
            return {'scale': 1.0 + normal((d,), 0.1), 'bias': bias(d)}

        layers = []
        for _ in range(self.layers):
            layers.append({
                'attn': {'wq': matrix(d, d), 'bq': bias(d), 'wk': matrix(d, d),
                         'bk': bias(d), 'wv': matrix(d, d), 'bv': bias(d),
                         'wo': matrix(d, d), 'bo': bias(d)},
                'ln1': layer_norm(),
                'ffn': {'w1': matrix(d, f), 'b1': bias(f), 'w2': matrix(f, d),
                        'b2': bias(d)},
                'ln2': layer_norm(),
            })
        return {'wte': normal((self.vocab, d), 0.3),
                'wpe': normal((self.max_positions, d), 0.1),
                'ln_emb': layer_norm(), 'layers': layers,
                'head': {'w': matrix(d, d), 'b': bias(d), 'ln': layer_norm(),
                         'bias_out': bias(self.vocab)}}

    def example_batch(self, key):
        """int32 tokens, targets and mask [batch, seq] (see the class docstring)."""
        k_ids, k_sel = jax.random.split(key)
        shape = (self.batch, self.seq)
        low = min(1000, self.vocab // 2)  # above BERT's special tokens when the vocab allows
        targets = jax.random.randint(k_ids, shape, low, self.vocab, jnp.int32)
        selected = jax.random.uniform(k_sel, shape) < 0.15
        tokens = jnp.where(selected, min(self.MASK_ID, self.vocab - 1), targets)
        lengths = jnp.array([self.seq if i % 2 == 0 else max(1, 3 * self.seq // 4)
                             for i in range(self.batch)])
        mask = (jnp.arange(self.seq)[None, :] < lengths[:, None]).astype(jnp.int32)
        return {'tokens': tokens.astype(jnp.int32), 'targets': targets, 'mask': mask}

    def layer_norm(self, x, p):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + self.ln_eps) * p['scale'] + p['bias']

    def attention(self, x, p, mask):
        """Multi-head self-attention over the keys where mask is 1; x is [b, s, d]."""
        b, s, d = x.shape
        h = self.heads

        def heads(t):  # [b, s, d] -> [b, h, s, d/h]
            return t.reshape(b, s, h, d // h).transpose(0, 2, 1, 3)

        q = heads(x @ p['wq'] + p['bq'])
        k = heads(x @ p['wk'] + p['bk'])
        v = heads(x @ p['wv'] + p['bv'])
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // h)
        scores = scores + (1.0 - mask[:, None, None, :].astype(x.dtype)) * -1e9
        out = jax.nn.softmax(scores, axis=-1) @ v
        out = out.transpose(0, 2, 1, 3).reshape(b, s, d)
        return out @ p['wo'] + p['bo']

    def loss_fn(self, params, batch):
        """Mean cross-entropy of the tied masked-LM head over the unpadded positions."""
        tokens, targets, mask = batch['tokens'], batch['targets'], batch['mask']
        x = params['wte'][tokens] + params['wpe'][jnp.arange(tokens.shape[1])]
        x = self.layer_norm(x, params['ln_emb'])
        for layer in params['layers']:
            x = self.layer_norm(x + self.attention(x, layer['attn'], mask), layer['ln1'])
            f = layer['ffn']
            y = jax.nn.gelu(x @ f['w1'] + f['b1'], approximate=False) @ f['w2'] + f['b2']
            x = self.layer_norm(x + y, layer['ln2'])
        head = params['head']
        hid = jax.nn.gelu(x @ head['w'] + head['b'], approximate=False)
        hid = self.layer_norm(hid, head['ln'])
        logits = hid @ params['wte'].T + head['bias_out']
        logp = jax.nn.log_softmax(logits, axis=-1)
        nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
        weights = mask.astype(nll.dtype)
        return jnp.sum(nll * weights) / jnp.sum(weights)


#: The models jax_training.py runs, by the name it prints.
class EinsumGPT:
    """The GPT above as Flax and optax write it. Attention: jnp.einsum
    over [batch, seq, heads, head_dim] operands ('bqhd,bkhd->bhqk', then
    'bhqk,bkhd->bqhd') and the causal mask filled with finfo.min rather
    than -inf. LayerNorm as flax.linen.LayerNorm computes it (flax 0.12):
    the "fast" variance mean(x^2) - mean(x)^2 clamped at 0, and the scale
    multiplied into rsqrt(var + eps) before it meets x - mean. The loss:
    optax.softmax_cross_entropy_with_integer_labels (logsumexp minus the
    picked logit). Same parameters and batch as GPT."""
    init_params = staticmethod(GPT.init_params)
    example_batch = staticmethod(GPT.example_batch)

    @staticmethod
    def attention(x, p):
        b, s, d = x.shape
        h = GPT.HEADS
        qkv = x @ p['wqkv'] + p['bqkv']
        q, k, v = (t.reshape(b, s, h, d // h) for t in jnp.split(qkv, 3, axis=-1))
        scores = jnp.einsum('bqhd,bkhd->bhqk', q, k) / math.sqrt(d // h)
        causal = jnp.tril(jnp.ones((s, s), dtype=bool))
        scores = jnp.where(causal, scores, jnp.finfo(scores.dtype).min)
        out = jnp.einsum('bhqk,bkhd->bqhd', jax.nn.softmax(scores, axis=-1), v)
        return out.reshape(b, s, d) @ p['wo'] + p['bo']

    @staticmethod
    def layer_norm(x, p):
        mean = jnp.mean(x, axis=-1)
        mean2 = jnp.mean(x * x, axis=-1)
        var = jnp.maximum(0.0, mean2 - mean * mean)
        mul = jnp.expand_dims(jax.lax.rsqrt(var + GPT.LN_EPS), -1) * p['scale']
        return (x - jnp.expand_dims(mean, -1)) * mul + p['bias']

    @staticmethod
    def nll(logits, targets):
        import optax
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, targets))

    @staticmethod
    def loss_fn(params, batch):
        return GPT.loss_with(params, batch, EinsumGPT.attention,
                             EinsumGPT.layer_norm, EinsumGPT.nll)


class Llama:
    """A Llama-style decoder: 2 layers, d_model 32, 4 query heads sharing 2
    key/value heads (jnp.repeat), rotary embeddings from cos/sin tables of
    the positions, RMSNorm (eps 1e-6, scale only), a SwiGLU MLP
    (jax.nn.silu), attention through jax.nn.dot_product_attention with
    is_causal=True, and the token embedding tied to the output projection.

    The batch is {'tokens', 'targets'}, int32 [2, 16].
    """
    VOCAB = 64
    D_MODEL = 32
    HEADS = 4
    KV_HEADS = 2
    LAYERS = 2
    SEQ = 16
    BATCH = 2
    HIDDEN = 64
    EPS = 1e-6

    @staticmethod
    def init_params(key):
        d, v, kv = Llama.D_MODEL, Llama.VOCAB, Llama.KV_HEADS * (Llama.D_MODEL // Llama.HEADS)
        keys = iter(jax.random.split(key, 64))

        def normal(shape, std):
            return std * jax.random.normal(next(keys), shape, jnp.float32)

        def matrix(n_in, n_out):
            return normal((n_in, n_out), n_in ** -0.5)

        blocks = [{'norm1': 1.0 + normal((d,), 0.1),
                   'wq': matrix(d, d), 'wk': matrix(d, kv), 'wv': matrix(d, kv),
                   'wo': matrix(d, d), 'norm2': 1.0 + normal((d,), 0.1),
                   'w_gate': matrix(d, Llama.HIDDEN), 'w_up': matrix(d, Llama.HIDDEN),
                   'w_down': matrix(Llama.HIDDEN, d)} for _ in range(Llama.LAYERS)]
        return {'embed': normal((v, d), 0.5), 'blocks': blocks,
                'norm_f': 1.0 + normal((d,), 0.1)}

    @staticmethod
    def example_batch(key):
        ids = jax.random.randint(key, (Llama.BATCH, Llama.SEQ + 1), 0, Llama.VOCAB, jnp.int32)
        return {'tokens': ids[:, :-1], 'targets': ids[:, 1:]}

    @staticmethod
    def rms_norm(x, scale):
        return x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True)
                                 + Llama.EPS) * scale

    @staticmethod
    def rotary(x):
        """x [b, s, h, hd]: pairs (i, i + hd/2) rotated by position * 10000^(-2i/hd)."""
        s, hd = x.shape[1], x.shape[3]
        inv = 1.0 / (10000.0 ** (jnp.arange(0, hd, 2, dtype=x.dtype) / hd))
        angles = jnp.arange(s, dtype=x.dtype)[:, None] * inv[None, :]
        cos = jnp.concatenate([jnp.cos(angles)] * 2, axis=-1)[None, :, None, :]
        sin = jnp.concatenate([jnp.sin(angles)] * 2, axis=-1)[None, :, None, :]
        x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
        return x * cos + jnp.concatenate([-x2, x1], axis=-1) * sin

    @staticmethod
    def attention(x, p):
        b, s, d = x.shape
        h, kvh = Llama.HEADS, Llama.KV_HEADS
        hd = d // h
        q = Llama.rotary((x @ p['wq']).reshape(b, s, h, hd))
        k = Llama.rotary((x @ p['wk']).reshape(b, s, kvh, hd))
        v = (x @ p['wv']).reshape(b, s, kvh, hd)
        k = jnp.repeat(k, h // kvh, axis=2)
        v = jnp.repeat(v, h // kvh, axis=2)
        out = jax.nn.dot_product_attention(q, k, v, is_causal=True)
        return out.reshape(b, s, d) @ p['wo']

    @staticmethod
    def loss_fn(params, batch):
        tokens, targets = batch['tokens'], batch['targets']
        x = params['embed'][tokens]
        for blk in params['blocks']:
            x = x + Llama.attention(Llama.rms_norm(x, blk['norm1']), blk)
            y = Llama.rms_norm(x, blk['norm2'])
            x = x + (jax.nn.silu(y @ blk['w_gate']) * (y @ blk['w_up'])) @ blk['w_down']
        logits = Llama.rms_norm(x, params['norm_f']) @ params['embed'].T
        return next_token_nll(logits, targets)


class CNN:
    """A small image classifier in Flax's layout (NHWC images, HWIO
    kernels) through jax.lax.conv_general_dilated: a 3x3 SAME convolution
    with bias and ReLU, a 2x2 max pool (lax.reduce_window), a 3x3 stride-2
    SAME convolution, a depthwise 3x3 dilated convolution
    (feature_group_count = channels, rhs_dilation 2, explicit padding),
    global average pooling and a dense layer, with the mean cross-entropy
    of integer labels. Batch {'images': float32 [8, 12, 12, 3], 'labels':
    int32 [8] in [0, 5)}.
    """
    BATCH, SIZE, CLASSES = 8, 12, 5

    @staticmethod
    def init_params(key):
        k = jax.random.split(key, 5)
        def normal(k, shape, fan_in):
            return jax.random.normal(k, shape, jnp.float32) * fan_in ** -0.5
        return {'conv1': {'w': normal(k[0], (3, 3, 3, 8), 27),
                          'b': 0.1 * jax.random.normal(k[1], (8,), jnp.float32)},
                'conv2': {'w': normal(k[2], (3, 3, 8, 16), 72)},
                'depthwise': {'w': normal(k[3], (3, 3, 1, 16), 9)},
                'dense': {'w': normal(k[4], (16, CNN.CLASSES), 16)}}

    @staticmethod
    def example_batch(key):
        ki, kl = jax.random.split(key)
        images = jax.random.normal(ki, (CNN.BATCH, CNN.SIZE, CNN.SIZE, 3), jnp.float32)
        labels = jax.random.randint(kl, (CNN.BATCH,), 0, CNN.CLASSES, jnp.int32)
        return {'images': images, 'labels': labels}

    @staticmethod
    def loss_fn(params, batch):
        dn = ('NHWC', 'HWIO', 'NHWC')
        x = batch['images'].astype(params['conv1']['w'].dtype)
        x = jax.lax.conv_general_dilated(x, params['conv1']['w'], (1, 1), 'SAME',
                                         dimension_numbers=dn)
        x = jax.nn.relu(x + params['conv1']['b'])
        x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                  'VALID')
        x = jax.nn.relu(jax.lax.conv_general_dilated(
            x, params['conv2']['w'], (2, 2), 'SAME', dimension_numbers=dn))
        x = jax.nn.relu(jax.lax.conv_general_dilated(
            x, params['depthwise']['w'], (1, 1), ((2, 1), (1, 2)), rhs_dilation=(2, 2),
            dimension_numbers=dn, feature_group_count=16))
        logits = jnp.mean(x, axis=(1, 2)) @ params['dense']['w']
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, batch['labels'][:, None], axis=-1))


MODELS = {'gpt': GPT, 'mlp': MLP, 'dropout_mlp': DropoutMLP, 'scan_mlp': ScanMLP, 'llama': Llama,
          'einsum_gpt': EinsumGPT, 'cnn': CNN}
