"""A tiny llama-architecture GGUF that a real llama.cpp server loads in well under a second.

Random weights (fixed seed) and a byte-level BPE vocabulary learnt here from a short legal
text, with llama.cpp's `qwen2` pre-tokenizer: like the Qwen2 vocabulary the recordings under
../shared/protocols/llama-server were made with, it splits digits one by one and words into
pieces. Its replies are gibberish; only the protocol and the token counts matter.

Two choices make the server's behaviour predictable for tests:
1. The output rows of the end-of-generation tokens are zero, so at temperature 0 a free reply
   never ends by itself: it runs to `max_tokens` (`finish_reason: "length"`). A grammar (a JSON
   schema) that is complete leaves only those tokens allowed, so a constrained reply does end.
2. The output rows of byte tokens that are not printable ASCII are zero too, so a reply at
   temperature 0 is printable text (no UTF-8 fragments held back by the server).

`write_tiny_gguf(path, ending=True)` writes a variant whose free replies do end, for the whole
runs of tests/drafting/test_real_runs.py: the rows of its two end-of-generation tokens copy,
slightly larger, the rows of two pieces its greedy replies keep coming back to (ENDING_PIECES),
so a reply at temperature 0 ends where it would first have written one of them.

`claims=[...]` adds whole tokens that are claims (" March 3, 2019 ", " $4,100,000 "), which its
greedy replies write: each one's output row copies, slightly larger, the row of a piece those
replies often write (CLAIM_PIECES), so it is written where that piece would have been. Their
rows come last and from a generator of their own, so the rest of the model is the same with or
without them; no merge makes them, so no prompt is tokenized into them.
"""

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from gguf import GGUFWriter, TokenType

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
MERGES = 400
CONTEXT_TRAIN = 32768
EMBEDDING = 64
FEED_FORWARD = 128
HEADS = 4
KV_HEADS = 2
LAYERS = 2
SEED = 29
# The pieces whose rows the ending variant's end-of-generation tokens copy (<|im_end|> first,
# then <|endoftext|>), and by how much larger.
ENDING_PIECES = ("id", ";")
ENDING_SCALE = 1.05
# The pieces whose rows the claims copy (claim n the piece n), and by how much larger: pieces
# the ending variant's greedy replies often write, so that its replies hold some claims.
CLAIM_PIECES = (" contract", " letter", " burd", " transfer", " mo")
CLAIM_SCALE = 1.02
# What the BPE merges are learnt from: words a motion uses, so that they become a few tokens
# each, as they would with a real vocabulary; numbers stay one token a digit.
CORPUS = """
The plaintiff moves the court for an order compelling the defendant to produce the documents
requested in the first request for production. The defendant objected to each request as
overly broad and unduly burdensome, and produced no documents. The motion is timely under the
rules of civil procedure, and counsel met and conferred in good faith before filing it.
The court should grant the motion because the requests are relevant to the claims and
defenses, proportional to the needs of the case, and the objections state no specific reason.
The affidavit of the witness states that the contract was signed on the date shown in the
exhibit, that the payment was made by wire transfer, and that the invoice was never disputed.
Summary of the evidence: the deposition transcript, the emails between the parties, the
financial statements for each year, and the letter from counsel. The judge ordered the parties
to file a joint statement of the issues in dispute, with citations to the record and the
exhibits, and to appear for a hearing on the motion. Respectfully submitted, attorney for the
plaintiff. Under penalty of perjury, I declare that the foregoing is true and correct.
"""
# GPT-2's pre-tokenizer, as far as Python's `re` can say it (no \\p{L}); only the merges are
# learnt from it, llama.cpp applies its own `qwen2` rules when it tokenizes.
_PIECE = re.compile(r"'(?:s|t|re|ve|m|ll|d)| ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]+|\s+")


def byte_symbols() -> list[str]:
    """GPT-2's byte-to-character table: byte b is written as `byte_symbols()[b]`."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    symbols = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in symbols:
            symbols[b] = chr(256 + extra)
            extra += 1
    return [symbols[b] for b in range(256)]


def learn_merges(text: str, count: int) -> list[tuple[str, str]]:
    """Byte-pair merges, most frequent pair first (ties broken by the pair, so the same text
    always gives the same vocabulary)."""
    table = byte_symbols()
    words = Counter(tuple(table[b] for b in piece.encode()) for piece in _PIECE.findall(text))
    merges: list[tuple[str, str]] = []
    while len(merges) < count:
        pairs: Counter[tuple[str, str]] = Counter()
        for word, frequency in words.items():
            for pair in itertools.pairwise(word):
                pairs[pair] += frequency
        if not pairs:
            break
        best = max(pairs.items(), key=lambda item: (item[1], item[0]))[0]
        merges.append(best)
        words = Counter({_merge(word, best): n for word, n in words.items()})
    return merges


def _merge(word: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    merged: list[str] = []
    n = 0
    while n < len(word):
        if n + 1 < len(word) and (word[n], word[n + 1]) == pair:
            merged.append(word[n] + word[n + 1])
            n += 2
        else:
            merged.append(word[n])
            n += 1
    return tuple(merged)


def vocabulary() -> tuple[list[str], list[tuple[str, str]]]:
    """Tokens (256 bytes, then one per merge, then the special tokens) and the merges."""
    merges = learn_merges(CORPUS, MERGES)
    tokens = byte_symbols()
    for left, right in merges:
        if left + right not in tokens:
            tokens.append(left + right)
    return [*tokens, *SPECIAL_TOKENS], merges


def write_tiny_gguf(path: Path, *, ending: bool = False, claims: Sequence[str] = ()) -> Path:
    """Write the model to `path` (about 0.5 MB of F32 weights) and return it; `ending`: the
    variant whose free replies end; `claims`: whole tokens its replies write (see the module's
    docstring)."""
    tokens, merges = vocabulary()
    table = byte_symbols()
    claim_tokens = ["".join(table[b] for b in claim.encode()) for claim in claims]
    writer = GGUFWriter(path, "llama")
    writer.add_name("lexweb tiny test model")
    writer.add_block_count(LAYERS)
    writer.add_context_length(CONTEXT_TRAIN)
    writer.add_embedding_length(EMBEDDING)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(EMBEDDING // HEADS)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_file_type(0)  # all F32
    _add_tokenizer(writer, [*tokens, *claim_tokens], merges)
    _add_weights(writer, tokens, ending=ending, claims=claim_tokens)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _add_tokenizer(writer: GGUFWriter, tokens: list[str], merges: list[tuple[str, str]]) -> None:
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    special = {tokens.index(name) for name in SPECIAL_TOKENS}
    writer.add_token_types(
        [TokenType.CONTROL if n in special else TokenType.NORMAL for n in range(len(tokens))]
    )
    writer.add_token_merges([f"{left} {right}" for left, right in merges])
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_pad_token_id(tokens.index("<|endoftext|>"))
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)


def _add_weights(
    writer: GGUFWriter, tokens: list[str], *, ending: bool, claims: Sequence[str]
) -> None:
    rng = np.random.default_rng(SEED)
    # The claims' rows come after everything else, from a generator of their own: the model's
    # other weights stay what they are without them.
    extra = np.random.default_rng(SEED + 1)

    def matrix(rows: int, columns: int, scale: float = 0.1) -> np.ndarray:
        return (rng.standard_normal((rows, columns)) * scale).astype(np.float32)

    ones = np.ones(EMBEDDING, dtype=np.float32)
    head = EMBEDDING // HEADS
    embeddings = matrix(len(tokens), EMBEDDING, 1.0)
    claim_embeddings = extra.standard_normal((len(claims), EMBEDDING)).astype(np.float32)
    writer.add_tensor("token_embd.weight", np.concatenate([embeddings, claim_embeddings]))
    for n in range(LAYERS):
        writer.add_tensor(f"blk.{n}.attn_norm.weight", ones)
        writer.add_tensor(f"blk.{n}.attn_q.weight", matrix(EMBEDDING, EMBEDDING))
        writer.add_tensor(f"blk.{n}.attn_k.weight", matrix(KV_HEADS * head, EMBEDDING))
        writer.add_tensor(f"blk.{n}.attn_v.weight", matrix(KV_HEADS * head, EMBEDDING))
        writer.add_tensor(f"blk.{n}.attn_output.weight", matrix(EMBEDDING, EMBEDDING))
        writer.add_tensor(f"blk.{n}.ffn_norm.weight", ones)
        writer.add_tensor(f"blk.{n}.ffn_gate.weight", matrix(FEED_FORWARD, EMBEDDING))
        writer.add_tensor(f"blk.{n}.ffn_up.weight", matrix(FEED_FORWARD, EMBEDDING))
        writer.add_tensor(f"blk.{n}.ffn_down.weight", matrix(EMBEDDING, FEED_FORWARD))
    writer.add_tensor("output_norm.weight", ones)
    output = matrix(len(tokens), EMBEDDING, 1.0)
    output[[n for n, token in enumerate(tokens) if not _printable(token)]] = 0.0
    if ending:
        for special, piece in zip(("<|im_end|>", "<|endoftext|>"), ENDING_PIECES, strict=True):
            output[tokens.index(special)] = output[_index(tokens, piece)] * ENDING_SCALE
    if len(claims) > len(CLAIM_PIECES):
        raise ValueError(f"at most {len(CLAIM_PIECES)} claims, one a piece")
    claim_rows = np.zeros((len(claims), EMBEDDING), dtype=np.float32)
    for n, piece in enumerate(CLAIM_PIECES[: len(claims)]):
        claim_rows[n] = output[_index(tokens, piece)] * CLAIM_SCALE
    writer.add_tensor("output.weight", np.concatenate([output, claim_rows]))


def _index(tokens: list[str], piece: str) -> int:
    """The token that writes `piece`."""
    table = byte_symbols()
    return tokens.index("".join(table[b] for b in piece.encode()))


def _printable(token: str) -> bool:
    """Whether a token writes printable ASCII (or a newline); special tokens do not."""
    if token in SPECIAL_TOKENS:
        return False
    table = {symbol: b for b, symbol in enumerate(byte_symbols())}
    return all(32 <= table[c] < 127 or table[c] == 10 for c in token)
