"""The facts of a GGUF model file that placement needs, read from its header only.

GGUF (llama.cpp's model format, gguf-py/README and ggml/docs/gguf.md) is: magic "GGUF", a
uint32 version, uint64 tensor and key/value counts, the key/values, one info record per tensor
(name, dimensions, ggml type, offset), padding to the alignment, then the tensor data.

We parse the header ourselves with `struct` on a buffered file instead of `gguf.GGUFReader`:
the reader memory-maps the whole file and builds a numpy view for every value (hundreds of
thousands for a vocabulary), and it trusts the counts and lengths it reads, so a hostile or
damaged file can make it loop or allocate without bound. Here every count and length is checked
against a limit and against the bytes left in the file before anything is read or allocated,
values we do not need are skipped with a seek, and tensor data is never read. The `gguf`
package still supplies the format's constants (type sizes, file types) and writes the test files.

A model split by gguf-split (NAME-00001-of-00004.gguf) is read part by part: the first part
holds the metadata, every part holds some tensors.
"""

import os
import re
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TypedDict

from gguf.constants import (
    GGML_QUANT_SIZES,
    GGUF_DEFAULT_ALIGNMENT,
    GGUF_MAGIC,
    GGMLQuantizationType,
    GGUFValueType,
    LlamaFileType,
)

from lexweb.errors import DomainError

# Limits far above any real model (a header is a few MB: the vocabulary dominates) and far
# below what would hurt the web server. The largest published vocabularies have ~260,000
# entries; GGML tensors have at most 4 dimensions (GGML_MAX_DIMS); llama.cpp caps keys at 64 KiB.
MAX_KV_COUNT = 65_536
MAX_TENSOR_COUNT = 1_000_000
MAX_KEY_BYTES = 65_535
MAX_STRING_BYTES = 16 * 1024 * 1024
MAX_ARRAY_LENGTH = 4_194_304
MAX_DIMS = 4
MAX_SPLIT_COUNT = 1_000
# Metadata values we keep in memory (the rest are skipped): short numeric arrays only, such as
# per-layer head counts, and a budget over all of them.
MAX_KEPT_ARRAY = 4_096
MAX_KEPT_ELEMENTS = 65_536
MAX_KEPT_STRING = 1_024
MAX_ARCHITECTURE_CHARS = 50

_HEADER = struct.Struct("<IIQQ")
_SUPPORTED_VERSIONS = (2, 3)  # version 1 used 32-bit counts and is long gone
_SCALAR_FORMATS: dict[GGUFValueType, str] = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}
_WANTED_GENERAL = {
    "general.architecture",
    "general.name",
    "general.file_type",
    "general.alignment",
    "split.no",
    "split.count",
    "split.tensors.count",
}
# Read as "<architecture>.<suffix>"; the architecture may come after them in the file.
_WANTED_ARCH_SUFFIXES = {
    "block_count",
    "context_length",
    "embedding_length",
    "expert_count",
    "expert_used_count",
    "full_attention_interval",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
}
_SPLIT_NAME = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")
# Routed-expert tensors (blk.N.ffn_up_exps.weight, ...). Shared experts are "_shexp": always on.
_EXPERT_MARK = "_exps"

Value = int | float | bool | str | list[int | float | bool]


class GgufError(DomainError):
    """The file is not a GGUF model we can read. The message says where and why."""

    code = "gguf_invalid"


class DeploymentFacts(TypedDict):
    """GgufFacts under the names of Deployment's fields."""

    architecture: str
    total_params: int
    active_params: int
    quantization: str
    file_size_bytes: int
    weights_bytes: int
    n_layers: int
    n_kv_heads: int
    head_dim_k: int
    head_dim_v: int


@dataclass(frozen=True)
class GgufFacts:
    """What a GGUF header says about a model.

    `block_count` is the model's layer count; `kv_layers` the layers that keep a KV cache: all of
    them, except in hybrid models whose recurrent layers keep none (a per-layer head_count_kv
    with zeros, or `full_attention_interval`: Qwen3-Next and Qwen3.5 attend every 4th layer).
    `n_kv_heads` is the largest per-layer KV head count, so the KV estimate errs on the safe side.
    """

    architecture: str
    name: str
    total_params: int
    active_params: int
    expert_count: int
    expert_used_count: int
    quantization: str
    file_size_bytes: int
    weights_bytes: int
    block_count: int
    kv_layers: int
    n_kv_heads: int
    head_dim_k: int
    head_dim_v: int
    context_length: int
    tensor_count: int
    files: int

    def deployment_values(self) -> DeploymentFacts:
        return DeploymentFacts(
            architecture=self.architecture,
            total_params=self.total_params,
            active_params=self.active_params,
            quantization=self.quantization,
            file_size_bytes=self.file_size_bytes,
            weights_bytes=self.weights_bytes,
            n_layers=self.kv_layers,
            n_kv_heads=self.n_kv_heads,
            head_dim_k=self.head_dim_k,
            head_dim_v=self.head_dim_v,
        )


def read_gguf_facts(path: str | Path) -> GgufFacts:
    """Read the facts of the model at `path` (any part of a split model) from its header.

    Reads only headers: a few MB at most, whatever the model's size. Raises GgufError for
    anything that is not a well-formed GGUF model; never returns partial facts.
    """
    first = _read_part(Path(path))
    parts = [first]
    split_count = _int(first.metadata, "split.count") or 1
    if split_count > 1:
        parts = [_read_part(p) for p in _split_paths(Path(path), split_count)]
        _check_split(parts)
    metadata = parts[0].metadata
    return _facts(metadata, parts)


# --- Reading one file ------------------------------------------------------------------------


@dataclass
class _Part:
    path: Path
    file_size: int
    metadata: dict[str, Value]
    tensor_count: int = 0
    params: int = 0
    expert_params: int = 0
    weights_bytes: int = 0
    elements_by_type: Counter[str] = field(default_factory=Counter)


class _Cursor:
    """Sequential reads that never go past the end of the file or a limit."""

    def __init__(self, stream: BinaryIO, size: int, label: str) -> None:
        self.stream = stream
        self.size = size
        self.label = label
        self.pos = 0

    def fail(self, message: str) -> GgufError:
        return GgufError(f"{self.label}: {message}")

    def _room(self, n: int, what: str) -> None:
        if n > self.size - self.pos:
            raise self.fail(
                f"truncated header at byte {self.size} (reading {what} at byte "
                f"{self.pos}, {n} bytes needed)"
            )

    def take(self, n: int, what: str) -> bytes:
        self._room(n, what)
        data = self.stream.read(n)
        if len(data) != n:  # the file shrank while we read it
            raise self.fail(f"truncated header at byte {self.pos + len(data)}.")
        self.pos += n
        return data

    def skip(self, n: int, what: str) -> None:
        self._room(n, what)
        # Within the read buffer this is no system call; tokenizer arrays are skipped this way.
        self.stream.seek(n, 1)
        self.pos += n

    def unpack(self, fmt: str, what: str) -> tuple[int | float | bool, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))

    def u32(self, what: str) -> int:
        return int(self.unpack("I", what)[0])

    def u64(self, what: str) -> int:
        return int(self.unpack("Q", what)[0])

    def check_count(self, count: int, limit: int, min_bytes: int, what: str) -> None:
        """Refuse a count over its limit, or one the rest of the file cannot hold, before any
        loop runs over it."""
        if count > limit:
            raise self.fail(f"absurd number of {what}: {count:,} (the limit is {limit:,}).")
        left = self.size - self.pos
        if count * min_bytes > left:
            raise self.fail(
                f"truncated header at byte {self.size} ({count:,} {what} cannot fit in the "
                f"{left:,} bytes left)."
            )

    def string_length(self, limit: int, what: str) -> int:
        length = self.u64(f"the length of {what}")
        if length > limit:
            raise self.fail(
                f"{what} at byte {self.pos - 8} claims {length:,} bytes (the limit is {limit:,})"
            )
        return length

    def string(self, limit: int, what: str) -> str:
        raw = self.take(self.string_length(limit, what), what)
        return raw.decode("utf-8", errors="replace")


def _read_part(path: Path) -> _Part:
    # A FIFO or a device such as /dev/zero would block or never end; only regular files.
    if not path.is_file():
        raise GgufError(f"{path}: no such file (or not a regular file).")
    try:
        with path.open("rb", buffering=1024 * 1024) as stream:
            cursor = _Cursor(stream, os.fstat(stream.fileno()).st_size, path.name)
            return _read_header(cursor, path)
    except OSError as exc:
        raise GgufError(f"{path}: cannot be read ({exc.strerror or exc}).") from None


def _read_header(cursor: _Cursor, path: Path) -> _Part:
    if cursor.size < 4 or cursor.take(4, "the magic") != struct.pack("<I", GGUF_MAGIC):
        raise cursor.fail("not a GGUF file (it does not start with 'GGUF').")
    version = cursor.u32("the version")
    if version not in _SUPPORTED_VERSIONS:
        # A big-endian file shows its version byte-swapped (3 reads as 50331648).
        if version & 0xFFFF == 0 and (version >> 24) in _SUPPORTED_VERSIONS:
            raise cursor.fail("big-endian GGUF files are not supported.")
        raise cursor.fail(f"unsupported GGUF version {version} (versions 2 and 3 are read).")
    tensor_count = cursor.u64("the tensor count")
    kv_count = cursor.u64("the key/value count")
    # Each key/value takes at least 12 bytes, each tensor record at least 24.
    cursor.check_count(kv_count, MAX_KV_COUNT, 12, "key/values")
    cursor.check_count(tensor_count, MAX_TENSOR_COUNT, 24, "tensors")
    part = _Part(path=path, file_size=cursor.size, metadata={}, tensor_count=tensor_count)
    budget = [MAX_KEPT_ELEMENTS]
    for _ in range(kv_count):
        key = cursor.string(MAX_KEY_BYTES, "a key")
        vtype = _value_type(cursor, cursor.u32(f"the type of {_shown(key)}"), key)
        value = _read_value(cursor, vtype, key, keep=_wanted(key), budget=budget)
        if value is not None:
            part.metadata[key] = value
    _read_tensors(cursor, part)
    return part


def _shown(text: str) -> str:
    """A key or tensor name as error messages quote it: escaped and at most 80 characters."""
    return repr(text if len(text) <= 80 else text[:80] + "...")


def _wanted(key: str) -> bool:
    if key in _WANTED_GENERAL:
        return True
    _, _, suffix = key.partition(".")
    return suffix in _WANTED_ARCH_SUFFIXES


def _value_type(cursor: _Cursor, raw: int, key: str) -> GGUFValueType:
    try:
        return GGUFValueType(raw)
    except ValueError:
        raise cursor.fail(f"{_shown(key)} has unknown value type {raw}.") from None


def _read_value(
    cursor: _Cursor, vtype: GGUFValueType, key: str, *, keep: bool, budget: list[int]
) -> Value | None:
    """Read (keep=True) or skip one value. Only scalars, short strings and short numeric
    arrays are ever kept, so what is kept stays small whatever the file claims."""
    if vtype == GGUFValueType.STRING:
        length = cursor.string_length(MAX_STRING_BYTES, f"the value of {_shown(key)}")
        if keep and length <= MAX_KEPT_STRING:
            return cursor.take(length, _shown(key)).decode("utf-8", errors="replace")
        cursor.skip(length, f"the value of {_shown(key)}")
        return None
    if vtype == GGUFValueType.ARRAY:
        return _read_array(cursor, key, keep=keep, budget=budget)
    fmt = _SCALAR_FORMATS[vtype]
    (value,) = cursor.unpack(fmt, f"the value of {_shown(key)}")
    return value if keep else None


def _read_array(cursor: _Cursor, key: str, *, keep: bool, budget: list[int]) -> Value | None:
    item_type = _value_type(cursor, cursor.u32(f"the item type of {_shown(key)}"), key)
    count = cursor.u64(f"the length of {_shown(key)}")
    if item_type == GGUFValueType.ARRAY:
        raise cursor.fail(
            f"{_shown(key)} is an array of arrays, which GGUF readers do not support."
        )
    item_size = (
        8
        if item_type == GGUFValueType.STRING
        else struct.calcsize("<" + _SCALAR_FORMATS[item_type])
    )
    cursor.check_count(count, MAX_ARRAY_LENGTH, item_size, f"items in {_shown(key)}")
    if item_type == GGUFValueType.STRING:
        what = f"an item of {_shown(key)}"
        for _ in range(count):
            cursor.skip(cursor.string_length(MAX_STRING_BYTES, what), what)
        return None
    fmt = _SCALAR_FORMATS[item_type]
    if keep and count <= MAX_KEPT_ARRAY and count <= budget[0]:
        budget[0] -= count
        return list(cursor.unpack(f"{count}{fmt}", _shown(key)))
    cursor.skip(count * item_size, _shown(key))
    return None


def _read_tensors(cursor: _Cursor, part: _Part) -> None:
    alignment = _int(part.metadata, "general.alignment") or GGUF_DEFAULT_ALIGNMENT
    if alignment <= 0 or alignment & (alignment - 1):
        raise cursor.fail(f"general.alignment {alignment} is not a power of two.")
    last_end, last_name = 0, ""
    for _ in range(part.tensor_count):
        name, n_elements, ggml_type, offset, nbytes = _read_tensor_info(cursor, alignment)
        part.params += n_elements
        part.weights_bytes += nbytes
        part.elements_by_type[ggml_type.name] += n_elements
        if _EXPERT_MARK in name:
            part.expert_params += n_elements
        if offset + nbytes > last_end:
            last_end, last_name = offset + nbytes, name
    data_start = -(-cursor.pos // alignment) * alignment
    if part.tensor_count and data_start + last_end > cursor.size:
        raise cursor.fail(
            f"tensor {_shown(last_name)} ends at byte {data_start + last_end:,}, past the end of "
            f"the file ({cursor.size:,} bytes): the file is truncated."
        )


def _read_tensor_info(
    cursor: _Cursor, alignment: int
) -> tuple[str, int, GGMLQuantizationType, int, int]:
    name = cursor.string(MAX_KEY_BYTES, "a tensor name")
    n_dims = cursor.u32(f"the dimension count of tensor {_shown(name)}")
    if n_dims > MAX_DIMS:
        raise cursor.fail(
            f"tensor {_shown(name)} claims {n_dims:,} dimensions (at most {MAX_DIMS})."
        )
    dims = [cursor.u64(f"a dimension of tensor {_shown(name)}") for _ in range(n_dims)]
    raw_type = cursor.u32(f"the type of tensor {_shown(name)}")
    offset = cursor.u64(f"the offset of tensor {_shown(name)}")
    try:
        ggml_type = GGMLQuantizationType(raw_type)
        block_size, type_size = GGML_QUANT_SIZES[ggml_type]
    except (ValueError, KeyError):
        raise cursor.fail(f"tensor {_shown(name)} has unknown ggml type {raw_type}.") from None
    n_elements = 1
    for dim in dims:
        n_elements *= dim
    # Checked against the file's size below; this only keeps the arithmetic sane meanwhile.
    if n_elements > cursor.size * 8:
        raise cursor.fail(f"tensor {_shown(name)} claims an absurd size {dims}.")
    if dims and dims[0] % block_size:
        raise cursor.fail(
            f"tensor {_shown(name)}: rows of {dims[0]} are not a multiple of the "
            f"{ggml_type.name} block size {block_size}."
        )
    if offset % alignment:
        raise cursor.fail(f"tensor {_shown(name)} is not aligned to {alignment} bytes.")
    return name, n_elements, ggml_type, offset, n_elements // block_size * type_size


# --- Split models ----------------------------------------------------------------------------


def _split_paths(path: Path, count: int) -> list[Path]:
    match = _SPLIT_NAME.match(path.name)
    if count > MAX_SPLIT_COUNT:
        raise GgufError(f"{path.name}: absurd split count {count:,}.")
    if match is None or int(match["count"]) != count:
        raise GgufError(
            f"{path.name} is one of {count} parts of a split model, but its name does not follow "
            f"NAME-00001-of-{count:05d}.gguf, so the other parts cannot be found."
        )
    paths = [
        path.with_name(f"{match['prefix']}-{n:05d}-of-{count:05d}.gguf")
        for n in range(1, count + 1)
    ]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise GgufError(f"{path.name}: part {missing[0]} of the split model is missing.")
    return paths


def _check_split(parts: list[_Part]) -> None:
    first = parts[0]
    expected = _int(first.metadata, "split.tensors.count")
    found = sum(p.tensor_count for p in parts)
    if expected is not None and expected != found:
        raise GgufError(
            f"{first.path.name}: the split model lists {expected:,} tensors, its parts hold "
            f"{found:,}."
        )
    for number, part in enumerate(parts):
        if (_int(part.metadata, "split.no") or 0) != number:
            raise GgufError(f"{part.path.name} does not say it is part {number + 1}.")


# --- Facts -----------------------------------------------------------------------------------


def _int(metadata: dict[str, Value], key: str) -> int | None:
    value = metadata.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _per_layer(metadata: dict[str, Value], key: str) -> list[int] | None:
    """A value that is either one integer or one per layer (e.g. head_count_kv of hybrids)."""
    value = metadata.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return [int(v) for v in value]
    return None


def _architecture(metadata: dict[str, Value], label: str) -> str:
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise GgufError(f"{label}: the header has no general.architecture.")
    if len(arch) > MAX_ARCHITECTURE_CHARS or not arch.isprintable():
        raise GgufError(f"{label}: general.architecture is not a plausible name.")
    return arch


def _quantization(metadata: dict[str, Value], by_type: Counter[str]) -> str:
    file_type = _int(metadata, "general.file_type")
    if file_type is not None and file_type != LlamaFileType.GUESSED:
        try:
            name = LlamaFileType(file_type).name
        except ValueError:
            pass
        else:
            return name.removeprefix("MOSTLY_").removeprefix("ALL_")
    # No (or an unknown) file type: name the file after the type holding most parameters.
    return by_type.most_common(1)[0][0] if by_type else ""


def _facts(metadata: dict[str, Value], parts: list[_Part]) -> GgufFacts:
    label = parts[0].path.name
    arch = _architecture(metadata, label)
    block_count = _int(metadata, f"{arch}.block_count") or 0
    heads = _per_layer(metadata, f"{arch}.attention.head_count") or [0]
    # llama.cpp's default when a model states no KV head count: one KV head per query head.
    kv_heads = _per_layer(metadata, f"{arch}.attention.head_count_kv") or heads
    kv_layers = _kv_layers(metadata, arch, block_count, kv_heads)
    embedding = _int(metadata, f"{arch}.embedding_length") or 0
    fallback_head_dim = embedding // max(heads) if max(heads) > 0 else 0
    expert_count = _int(metadata, f"{arch}.expert_count") or 0
    expert_used = _int(metadata, f"{arch}.expert_used_count") or 0
    if expert_used > expert_count:
        raise GgufError(f"{label}: {expert_used} experts used per token of only {expert_count}.")
    total = sum(p.params for p in parts)
    experts = sum(p.expert_params for p in parts)
    by_type: Counter[str] = Counter()
    for part in parts:
        by_type.update(part.elements_by_type)
    active = total
    if experts and expert_count and expert_used:
        active = total - experts + experts * expert_used // expert_count
    name = metadata.get("general.name")
    # Shown in the admin and printed on terminals: no control characters.
    name = "".join(ch for ch in name if ch.isprintable())[:200] if isinstance(name, str) else ""
    return GgufFacts(
        architecture=arch,
        name=name,
        total_params=total,
        active_params=active,
        expert_count=expert_count,
        expert_used_count=expert_used,
        quantization=_quantization(metadata, by_type),
        file_size_bytes=sum(p.file_size for p in parts),
        weights_bytes=sum(p.weights_bytes for p in parts),
        block_count=block_count,
        kv_layers=kv_layers,
        n_kv_heads=max(kv_heads),
        head_dim_k=_int(metadata, f"{arch}.attention.key_length") or fallback_head_dim,
        head_dim_v=_int(metadata, f"{arch}.attention.value_length") or fallback_head_dim,
        context_length=_int(metadata, f"{arch}.context_length") or 0,
        tensor_count=sum(p.tensor_count for p in parts),
        files=len(parts),
    )


def _kv_layers(metadata: dict[str, Value], arch: str, block_count: int, kv_heads: list[int]) -> int:
    if len(kv_heads) > 1:
        return sum(1 for heads in kv_heads if heads > 0)
    interval = _int(metadata, f"{arch}.full_attention_interval")
    if interval and interval > 0:
        # llama.cpp (qwen3next, qwen35): layer i attends when (i + 1) % interval == 0.
        return block_count // interval
    return block_count
