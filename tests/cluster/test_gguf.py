"""Issue "Cluster", requirement 1 (GGUF facts): the header reader against files written by the
reference writer (gguf-py's GGUFWriter) and cross-checked with its reader; hostile files end in
a GgufError quickly and without large allocations."""

import os
import struct
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader, GGUFWriter
from gguf.constants import GGUF_MAGIC, GGMLQuantizationType, GGUFValueType, LlamaFileType

from apps.cluster.gguf import GgufError, read_gguf_facts

Q8_0 = GGMLQuantizationType.Q8_0
F16 = GGMLQuantizationType.F16
F32 = GGMLQuantizationType.F32
# Bytes per element, written out here rather than taken from the code under test: Q8_0 stores
# 32 weights as 32 int8 plus one f16 scale.
BYTES_PER_ELEMENT = {Q8_0: 34 / 32, F16: 2, F32: 4}


@dataclass
class Spec:
    arch: str = "llama"
    layers: int = 2
    embd: int = 64
    heads: int = 4
    kv_heads: int | list[int] = 2
    key_length: int | None = None
    ffn: int = 128
    vocab: int = 96
    experts: int = 0
    experts_used: int = 0
    file_type: int | None = LlamaFileType.MOSTLY_Q8_0
    full_attention_interval: int | None = None
    matrix_type: GGMLQuantizationType = Q8_0


@dataclass
class Written:
    """What the test wrote, counted independently of the reader."""

    paths: list[Path]
    params: int = 0
    expert_params: int = 0
    weights_bytes: float = 0
    tensors: int = 0
    by_name: dict[str, int] = field(default_factory=dict)


def write_gguf(path: Path, spec: Spec | None = None, *, split_max_tensors: int = 0) -> Written:
    """A small model in the shape llama.cpp expects (token_embd, blk.N.*, output), with Q8_0
    matrices, F32 norms and an F16 output, a tokenizer and a chat template."""
    spec = spec or Spec()
    writer = GGUFWriter(path, spec.arch, split_max_tensors=split_max_tensors)
    writer.add_name("Test Model 1B")
    writer.add_block_count(spec.layers)
    writer.add_context_length(8192)
    writer.add_embedding_length(spec.embd)
    writer.add_feed_forward_length(spec.ffn)
    writer.add_head_count(spec.heads)
    writer.add_head_count_kv(spec.kv_heads)
    if spec.key_length:
        writer.add_key_length(spec.key_length)
        writer.add_value_length(spec.key_length)
    if spec.experts:
        writer.add_expert_count(spec.experts)
        writer.add_expert_used_count(spec.experts_used)
    if spec.full_attention_interval:
        writer.add_full_attention_interval(spec.full_attention_interval)
    if spec.file_type is not None:
        writer.add_file_type(spec.file_type)
    # Metadata the reader must skip: a vocabulary, scores and a long template.
    writer.add_token_list([f"tok{i}" for i in range(spec.vocab)])
    writer.add_token_scores([0.0] * spec.vocab)
    writer.add_chat_template("{% for m in messages %}{{ m.content }}{% endfor %}" * 200)

    written = Written(paths=[])

    def add(name: str, shape: tuple[int, ...], qtype: GGMLQuantizationType) -> None:
        n = prod(shape)
        if qtype == Q8_0:
            raw = np.zeros((*shape[:-1], shape[-1] // 32 * 34), dtype=np.uint8)
            writer.add_tensor(name, raw, raw_dtype=Q8_0)
        else:
            writer.add_tensor(name, np.zeros(shape, np.float16 if qtype == F16 else np.float32))
        written.params += n
        written.weights_bytes += n * BYTES_PER_ELEMENT[qtype]
        written.tensors += 1
        written.by_name[name] = n
        if "_exps" in name:
            written.expert_params += n

    head_dim = spec.key_length or spec.embd // spec.heads
    kv_heads = max(spec.kv_heads) if isinstance(spec.kv_heads, list) else spec.kv_heads
    matrix = spec.matrix_type
    add("token_embd.weight", (spec.vocab, spec.embd), matrix)
    for i in range(spec.layers):
        add(f"blk.{i}.attn_norm.weight", (spec.embd,), F32)
        add(f"blk.{i}.attn_q.weight", (spec.heads * head_dim, spec.embd), matrix)
        add(f"blk.{i}.attn_k.weight", (kv_heads * head_dim, spec.embd), matrix)
        add(f"blk.{i}.attn_v.weight", (kv_heads * head_dim, spec.embd), matrix)
        add(f"blk.{i}.attn_output.weight", (spec.embd, spec.heads * head_dim), matrix)
        add(f"blk.{i}.ffn_norm.weight", (spec.embd,), F32)
        if spec.experts:
            add(f"blk.{i}.ffn_gate_inp.weight", (spec.experts, spec.embd), F32)
            add(f"blk.{i}.ffn_gate_exps.weight", (spec.experts, spec.ffn, spec.embd), matrix)
            add(f"blk.{i}.ffn_up_exps.weight", (spec.experts, spec.ffn, spec.embd), matrix)
            add(f"blk.{i}.ffn_down_exps.weight", (spec.experts, spec.embd, spec.ffn), matrix)
            add(f"blk.{i}.ffn_up_shexp.weight", (spec.ffn, spec.embd), F16)
        else:
            add(f"blk.{i}.ffn_gate.weight", (spec.ffn, spec.embd), matrix)
            add(f"blk.{i}.ffn_up.weight", (spec.ffn, spec.embd), matrix)
            add(f"blk.{i}.ffn_down.weight", (spec.embd, spec.ffn), matrix)
    add("output_norm.weight", (spec.embd,), F32)
    add("output.weight", (spec.vocab, spec.embd), F16)

    written.paths = writer.format_shard_names(path)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return written


# --- Facts -----------------------------------------------------------------------------------


def test_dense_model_facts_match_what_was_written_and_the_reference_reader(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dense.gguf"
    written = write_gguf(path)

    facts = read_gguf_facts(path)

    assert facts.architecture == "llama" and facts.name == "Test Model 1B"
    assert facts.total_params == facts.active_params == written.params
    assert facts.weights_bytes == written.weights_bytes
    reference = GGUFReader(path)
    assert facts.weights_bytes == sum(int(t.n_bytes) for t in reference.tensors)
    assert facts.total_params == sum(int(t.n_elements) for t in reference.tensors)
    assert facts.file_size_bytes == path.stat().st_size
    assert facts.tensor_count == written.tensors == len(reference.tensors)
    assert (facts.block_count, facts.kv_layers, facts.n_kv_heads) == (2, 2, 2)
    # No key_length in the header: embedding_length / head_count, as llama.cpp does.
    assert (facts.head_dim_k, facts.head_dim_v) == (64 // 4, 64 // 4)
    assert (facts.quantization, facts.context_length, facts.files) == ("Q8_0", 8192, 1)


def test_mixed_tensor_types_are_sized_by_their_own_type(tmp_path: Path) -> None:
    path = tmp_path / "dense.gguf"
    written = write_gguf(path, Spec(layers=1))

    facts = read_gguf_facts(path)

    # 1 layer, embd 64, ffn 128, vocab 96, 2 KV heads of 16: the bytes by hand.
    q8_elements = 96 * 64 + 64 * 64 + 2 * (32 * 64) + 64 * 64 + 3 * (128 * 64)
    f32_elements = 64 + 64 + 64
    f16_elements = 96 * 64
    assert written.params == q8_elements + f32_elements + f16_elements
    assert facts.weights_bytes == q8_elements // 32 * 34 + f32_elements * 4 + f16_elements * 2


def test_moe_active_params_count_only_the_experts_used_per_token(tmp_path: Path) -> None:
    path = tmp_path / "moe.gguf"
    spec = Spec(arch="qwen3moe", experts=8, experts_used=2, key_length=32, layers=3)
    written = write_gguf(path, spec)

    facts = read_gguf_facts(path)

    routed = written.expert_params
    assert routed == 3 * 3 * 8 * 128 * 64
    assert facts.total_params == written.params
    # The shared expert (_shexp) and the router are always on.
    assert facts.active_params == written.params - routed + routed * 2 // 8
    assert (facts.expert_count, facts.expert_used_count) == (8, 2)
    assert (facts.head_dim_k, facts.head_dim_v) == (32, 32)
    values = facts.deployment_values()
    assert values["active_params"] == facts.active_params
    assert values["weights_bytes"] == written.weights_bytes


def test_per_layer_kv_heads_count_only_layers_with_a_cache_and_keep_the_largest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hybrid.gguf"
    write_gguf(path, Spec(layers=4, kv_heads=[0, 4, 0, 2]))

    facts = read_gguf_facts(path)

    assert (facts.block_count, facts.kv_layers, facts.n_kv_heads) == (4, 2, 4)
    assert facts.deployment_values()["n_layers"] == 2


def test_full_attention_interval_leaves_a_cache_in_every_nth_layer(tmp_path: Path) -> None:
    path = tmp_path / "qwen35.gguf"
    write_gguf(path, Spec(arch="qwen35moe", layers=8, full_attention_interval=4))

    facts = read_gguf_facts(path)

    assert (facts.architecture, facts.block_count, facts.kv_layers) == ("qwen35moe", 8, 2)


@pytest.mark.parametrize(
    ("file_type", "matrix_type", "expected"),
    [
        (LlamaFileType.MOSTLY_Q4_K_M, Q8_0, "Q4_K_M"),
        (LlamaFileType.ALL_F32, F32, "F32"),
        (None, Q8_0, "Q8_0"),
        (None, F16, "F16"),
        (LlamaFileType.GUESSED, Q8_0, "Q8_0"),
    ],
)
def test_quantisation_is_the_file_type_or_else_the_dominant_tensor_type(
    tmp_path: Path, file_type: int | None, matrix_type: GGMLQuantizationType, expected: str
) -> None:
    path = tmp_path / "m.gguf"
    write_gguf(path, Spec(file_type=file_type, matrix_type=matrix_type))

    assert read_gguf_facts(path).quantization == expected


def test_a_split_model_is_read_whole_from_any_of_its_parts(tmp_path: Path) -> None:
    whole = write_gguf(tmp_path / "one.gguf")
    written = write_gguf(tmp_path / "split.gguf", split_max_tensors=8)
    assert len(written.paths) == 3
    assert written.paths[1].name == "split-00002-of-00003.gguf"

    for part in written.paths:
        facts = read_gguf_facts(part)
        assert facts.files == 3
        assert facts.total_params == whole.params
        assert facts.weights_bytes == whole.weights_bytes
        assert facts.file_size_bytes == sum(p.stat().st_size for p in written.paths)
        assert (facts.architecture, facts.quantization, facts.n_kv_heads) == ("llama", "Q8_0", 2)


def test_a_missing_part_of_a_split_model_is_named(tmp_path: Path) -> None:
    written = write_gguf(tmp_path / "split.gguf", split_max_tensors=8)
    written.paths[2].unlink()

    with pytest.raises(GgufError, match=r"split-00003-of-00003\.gguf .*missing"):
        read_gguf_facts(written.paths[0])


def test_a_renamed_part_of_a_split_model_is_refused(tmp_path: Path) -> None:
    written = write_gguf(tmp_path / "split.gguf", split_max_tensors=8)
    renamed = written.paths[0].rename(tmp_path / "model.gguf")

    with pytest.raises(GgufError, match="one of 3 parts"):
        read_gguf_facts(renamed)


def test_only_the_header_is_read_even_for_a_64_gib_model(tmp_path: Path) -> None:
    path = tmp_path / "huge.gguf"
    writer = GGUFWriter(path, "llama")
    writer.add_block_count(1)
    rows, cols = 1_048_576, 65_536  # 2**36 weights, as Q8_0: 68 GiB of data
    byte_shape = (rows, cols // 32 * 34)
    writer.add_tensor_info("token_embd.weight", byte_shape, np.dtype(np.uint8), 0, Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    header_end = path.stat().st_size
    # Sparse: the data is never on disk, and reading it would take minutes.
    os.truncate(path, -(-header_end // 32) * 32 + rows * cols // 32 * 34)

    read_before = _bytes_read_by_this_thread()
    started = time.perf_counter()
    facts = read_gguf_facts(path)
    elapsed = time.perf_counter() - started

    # What the kernel handed this thread: the header and its read buffer, not 68 GiB.
    assert _bytes_read_by_this_thread() - read_before < 16 * 1024 * 1024
    assert elapsed < 10
    assert facts.weights_bytes == rows * cols // 32 * 34 == 73_014_444_032


def _bytes_read_by_this_thread() -> int:
    """`rchar` of this thread (Linux): every byte that read() calls have returned to it."""
    for line in Path("/proc/thread-self/io").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == "rchar":
            return int(value)
    raise AssertionError("no rchar in /proc/thread-self/io")


# --- Hostile files ---------------------------------------------------------------------------


def _u32(n: int) -> bytes:
    return struct.pack("<I", n)


def _u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def _str(raw: bytes) -> bytes:
    return _u64(len(raw)) + raw


def _head(*, tensors: int = 0, kvs: int = 1, version: int = 3) -> bytes:
    return _u32(GGUF_MAGIC) + _u32(version) + _u64(tensors) + _u64(kvs)


ARCH = _str(b"general.architecture") + _u32(GGUFValueType.STRING) + _str(b"llama")
PAD = b"\0" * 4096


def _tensor(name: bytes, dims: list[int], ggml_type: int = F32, offset: int = 0) -> bytes:
    return (
        _str(name)
        + _u32(len(dims))
        + b"".join(_u64(d) for d in dims)
        + _u32(ggml_type)
        + _u64(offset)
    )


HOSTILE: dict[str, tuple[bytes, str]] = {
    "empty": (b"", "not a GGUF file"),
    "zip": (b"PK\x03\x04" + PAD, "not a GGUF file"),
    "version 1": (_head(version=1) + PAD, "unsupported GGUF version 1"),
    "version 99": (_head(version=99) + PAD, "unsupported GGUF version 99"),
    "big-endian": (_u32(GGUF_MAGIC) + struct.pack(">I", 3) + PAD, "big-endian"),
    "absurd kv count": (_head(kvs=2**63) + PAD, "absurd number of key/values"),
    "kv count past the end": (_head(kvs=10_000) + PAD, "truncated header at byte"),
    "absurd number of tensors": (_head(tensors=2**40) + PAD, "absurd number of tensors"),
    "giant key length": (_head() + _u64(2**62) + PAD, "claims 4,611,686,018,427,387,904 bytes"),
    "giant string value": (
        _head() + _str(b"general.name") + _u32(GGUFValueType.STRING) + _u64(2**40) + PAD,
        "the limit is",
    ),
    "string value past the end": (
        _head() + _str(b"general.name") + _u32(GGUFValueType.STRING) + _u64(10_000) + PAD,
        "truncated header at byte",
    ),
    "absurd number of items": (
        _head()
        + _str(b"tokenizer.ggml.tokens")
        + _u32(GGUFValueType.ARRAY)
        + _u32(GGUFValueType.STRING)
        + _u64(2**60)
        + PAD,
        "absurd number of items",
    ),
    "array of arrays": (
        _head()
        + _str(b"x")
        + _u32(GGUFValueType.ARRAY)
        + _u32(GGUFValueType.ARRAY)
        + _u64(1)
        + PAD,
        "array of arrays",
    ),
    "unknown value type": (_head() + _str(b"x") + _u32(99) + PAD, "unknown value type 99"),
    "no architecture": (
        _head() + _str(b"general.name") + _u32(GGUFValueType.STRING) + _str(b"x") + PAD,
        "no general.architecture",
    ),
    "giant n_dims": (
        _head(tensors=1) + ARCH + _str(b"t") + _u32(2**31) + PAD,
        "claims 2,147,483,648 dimensions",
    ),
    "absurd dims": (
        _head(tensors=1) + ARCH + _tensor(b"t", [2**40, 2**40]) + PAD,
        "absurd size",
    ),
    "tensor past the end": (
        _head(tensors=1) + ARCH + _tensor(b"t", [64, 64]) + PAD,
        "past the end of the file",
    ),
    "unknown ggml type": (
        _head(tensors=1) + ARCH + _tensor(b"t", [4], ggml_type=77) + PAD,
        "unknown ggml type 77",
    ),
    "row not a whole block": (
        _head(tensors=1) + ARCH + _tensor(b"t", [33], ggml_type=Q8_0) + PAD,
        "not a multiple of the Q8_0 block size 32",
    ),
    "misaligned tensor": (
        _head(tensors=1) + ARCH + _tensor(b"t", [4], offset=3) + PAD,
        "not aligned",
    ),
    "more experts used than exist": (
        _head(kvs=3)
        + ARCH
        + _str(b"llama.expert_count")
        + _u32(GGUFValueType.UINT32)
        + _u32(2)
        + _str(b"llama.expert_used_count")
        + _u32(GGUFValueType.UINT32)
        + _u32(9)
        + PAD,
        "9 experts used per token of only 2",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_headers_are_refused_quickly_without_large_allocations(
    tmp_path: Path, case: str
) -> None:
    content, message = HOSTILE[case]
    path = tmp_path / "hostile.gguf"
    path.write_bytes(content)

    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(GgufError, match=message):
            read_gguf_facts(path)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    # Generous for a busy machine; a loop over an absurd count would take far longer.
    assert elapsed < 5
    assert peak < 4 * 1024 * 1024


def _cut_points(size: int) -> list[int]:
    return [1, 4, 6, 8, 15, 23, 24, 40, 100, size // 3, size // 2, size - 64, size - 1]


def test_a_file_cut_anywhere_is_refused_as_truncated(tmp_path: Path) -> None:
    whole = tmp_path / "whole.gguf"
    write_gguf(whole)
    content = whole.read_bytes()

    for cut in _cut_points(len(content)):
        path = tmp_path / f"cut-{cut}.gguf"
        path.write_bytes(content[:cut])
        with pytest.raises(GgufError) as refused:
            read_gguf_facts(path)
        expected = "not a GGUF file" if cut < 4 else "truncated"
        assert expected in refused.value.message, (cut, refused.value.message)


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "fifo")
    return tmp / "fifo"


@pytest.mark.parametrize(
    "make",
    [lambda tmp: tmp / "absent.gguf", lambda tmp: tmp, _fifo],
    ids=["missing", "directory", "fifo"],
)
def test_what_is_not_a_regular_file_is_refused_without_blocking(
    tmp_path: Path, make: Callable[[Path], Path]
) -> None:
    with pytest.raises(GgufError, match="no such file"):
        read_gguf_facts(make(tmp_path))


def test_control_characters_in_the_model_name_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    content = (
        _head(kvs=2)
        + ARCH
        + _str(b"general.name")
        + _u32(GGUFValueType.STRING)
        + _str(b"Evil\x1b[2J\nModel")
    )
    path.write_bytes(content)

    assert read_gguf_facts(path).name == "Evil[2JModel"
