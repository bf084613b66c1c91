"""How a stage's reply ended, and what is done with a free-text reply cut at its limit.

Every backend says how a reply ended (llama.cpp `finish_reason`, Ollama `done_reason`):
"stop" when the model ended it, "length" when it reached the call's `max_tokens`. The ending is
stored on each call record and on the stage (`Stage.finish_reason`, shown as `Stage.ending`:
"stop", "cut at its limit (2,048 tokens)").

A structured stage (gate, adversary, extractor) cut at its limit fails with its incomplete JSON
kept (outputs.model_outcome). A free-text stage cut at its limit is never a silent success;
what happens is its entry in ENDING_POLICY, and, for a reply still cut after its continuations,
whether its stage is in KEEPS_CUT:

| stage                       | cut at its limit                   | still cut after that          |
|-----------------------------|------------------------------------|-------------------------------|
| drafter, reasoner, revision | continued, up to                   | kept: a version marked        |
|                             | LEXWEB_STAGE_CONTINUATIONS calls   | truncated, verified, never    |
|                             |                                    | approved or exported as it is |
| summarizer                  | not continued                      | the stage ends truncated      |

Why continue: the drafter, the heavy reasoner and the revision each write the whole draft, whose
end (the relief sought, the signature block) matters as much as its start, so a reply that ran
out is worth one more call. A summary that outgrows its limit is not a summary any more; another
call would spend GPU time on more of the same, so the lawyer is told to narrow it.

Why keep a draft still cut: failing the stage would throw away everything the run is for. The
verifier would never read the text, so nobody would see which of its claims the record does not
hold, and the lawyer would get only an error; and a model that never ends a reply (a base
model, a server whose stop words do not match its template) would fail every run the same
way. A cut draft is still a draft of what the model claimed: the run goes on, the verifier
checks it and its findings block as for any version, and the version carries the fact
(DraftVersion.truncated_tokens: the reply's tokens) so that it can never be mistaken for a
finished draft: approval and export refuse it (409 `version_truncated`) whatever its findings,
with no override, since nothing a lawyer could write about the missing end makes it present.
The lawyer rejects the run, or writes the end as a new version (which is verified and
approved as any person's version is). The stage itself succeeds; its ending says "cut at its
limit", its output_json holds {"truncated": {"tokens", "not_continued"}}. The later writing
stages read the cut draft like any other; their own cut replies are kept the same way. A
summary still cut fails as before: a summary's end is not its relief sought, and its remedy
(narrower instructions) is the lawyer's before anything is verified.

A continuation:
1. goes to the deployment that wrote the text so far (a reply is never stitched from two
   models), with the stage's messages and that text as a last, unfinished assistant message:
   llama-server and Ollama continue that message (assistant prefill) and stream only the new
   tokens, which are appended to the text;
2. may take what the slot has left after the prompt and the text so far (less
   CONTINUATION_MARGIN_TOKENS), at most the stage's max_tokens; with less than
   MIN_CONTINUATION_TOKENS left it is not made. The stage's prompt was planned to leave
   max_tokens for the reply, so a continuation gets only the room the evidence left unused:
   a stage whose evidence filled the slot gets none;
3. is recorded like any call (a call record linked to the stage); its tokens add to the stage's
   completion_tokens, its ending becomes the stage's, `Stage.continuations` counts it. One
   that fails (the backend drops) fails the stage as any call that had streamed: the stage
   runs again whole, up to its attempts (pipeline.execute).
A reply still cut at the end (or one that could not be continued) is kept truncated by a
stage in KEEPS_CUT (above); any other stage ends truncated: it fails with "cut at its limit (N
tokens)" and why it was not continued, keeps the cut text as its output (the evidence; never a
draft version) and the run fails with that reason.
"""

from dataclasses import dataclass

from django.conf import settings

from apps.cluster.backends.base import Message
from apps.cluster.services.dispatch import CallResult
from apps.drafting.models import Stage

N = Stage.Name
CUT = "length"  # llama.cpp's finish_reason and Ollama's done_reason for a reply at max_tokens
CONTINUE = "continue"
TRUNCATE = "truncate"
ENDING_POLICY: dict[str, str] = {
    N.DRAFTER: CONTINUE,
    N.REASONER: CONTINUE,
    N.REVISION: CONTINUE,
    N.SUMMARIZER: TRUNCATE,
}
FREE_TEXT = set(ENDING_POLICY)
# The free-text stages whose reply still cut after its continuations becomes a version marked
# truncated (the module docstring says why); any other free-text stage fails truncated.
KEEPS_CUT = {N.DRAFTER, N.REASONER, N.REVISION}
MIN_CONTINUATION_TOKENS = 64
# Room left for the chat template's markers around the continued message, and for a tokenizer
# that splits the text so far a little differently when it is sent back.
CONTINUATION_MARGIN_TOKENS = 32


@dataclass
class Reply:
    """A free-text stage's reply so far: its calls in order and their text joined."""

    calls: list[CallResult]
    text: str
    # Why the reply, if it ends cut, was not continued further ("" while it may be).
    not_continued: str = ""

    @property
    def cut(self) -> bool:
        return self.calls[-1].finish_reason == CUT

    @property
    def completion_tokens(self) -> int:
        return sum(call.completion_tokens for call in self.calls)


@dataclass(frozen=True)
class Cut:
    """A reply kept though still cut at its limit: its tokens in all, and why it was not
    continued further."""

    tokens: int
    not_continued: str

    def as_json(self) -> dict[str, object]:
        return {"tokens": self.tokens, "not_continued": self.not_continued}


def kept_cut(name: str, reply: Reply) -> Cut | None:
    """The cut a stage keeps (KEEPS_CUT) when its reply ended still cut; None when the reply
    ended or the stage fails truncated instead."""
    if not reply.cut or name not in KEEPS_CUT:
        return None
    return Cut(tokens=reply.completion_tokens, not_continued=reply.not_continued)


def continuations_allowed(name: str) -> int:
    return settings.LEXWEB_STAGE_CONTINUATIONS if ENDING_POLICY.get(name) == CONTINUE else 0


def continuation_room(reply: Reply, *, context: int, max_tokens: int) -> int:
    """Tokens the next continuation may take: what the slot has left after the prompt and the
    text so far, at most `max_tokens`."""
    used = reply.calls[0].prompt_tokens + reply.completion_tokens + CONTINUATION_MARGIN_TOKENS
    return min(max_tokens, context - used)


def next_continuation(name: str, reply: Reply, *, context: int, max_tokens: int) -> int:
    """The max_tokens of the next continuation of `reply`, or 0 when there is none to make
    (it ended, the policy or the cap says no, or the slot has no room; `reply.not_continued`
    then says why)."""
    if not reply.cut:
        return 0
    allowed = continuations_allowed(name)
    made = len(reply.calls) - 1
    if ENDING_POLICY.get(name) != CONTINUE:
        reply.not_continued = f"the {_what(name)}'s replies are not continued"
    elif allowed == 0:
        reply.not_continued = "continuations are off (LEXWEB_STAGE_CONTINUATIONS is 0)"
    elif made >= allowed:
        reply.not_continued = f"LEXWEB_STAGE_CONTINUATIONS allows {allowed}"
    else:
        room = continuation_room(reply, context=context, max_tokens=max_tokens)
        if room >= MIN_CONTINUATION_TOKENS:
            return room
        reply.not_continued = (
            f"the model's {context:,}-token slot had no room left to continue it "
            f"({max(room, 0):,} tokens free, at least {MIN_CONTINUATION_TOKENS} needed)"
        )
    return 0


def continuation_messages(messages: list[Message], text: str) -> list[Message]:
    """The stage's messages and the text so far as the unfinished last assistant message."""
    return [*messages, {"role": "assistant", "content": text}]


def replied_custody(reply: Reply) -> dict[str, object]:
    """The stage's custody fields that sum up all the reply's calls (the first call's record,
    prompt and timing to the first token stay as the first call set them)."""
    last = reply.calls[-1]
    decoded = [c for c in reply.calls if c.decode_tokens_per_second and c.completion_tokens > 1]
    seconds = sum(c.completion_tokens / (c.decode_tokens_per_second or 1) for c in decoded)
    speed = sum(c.completion_tokens for c in decoded) / seconds if seconds else None
    return {
        "completion_tokens": reply.completion_tokens,
        "finish_reason": last.finish_reason[:32],
        "continuations": len(reply.calls) - 1,
        "duration_ms": sum(call.duration_ms for call in reply.calls),
        "tokens_per_second": speed if len(reply.calls) > 1 else last.decode_tokens_per_second,
    }


def truncated_message(name: str, reply: Reply) -> str:
    """What a truncated stage says (its error, and the run's)."""
    what = _what(name)
    made = len(reply.calls) - 1
    limit = reply.calls[-1].completion_tokens
    after = (
        f" again after {made} continuation{'s' if made != 1 else ''} "
        f"({reply.completion_tokens:,} tokens in all)"
        if made
        else ""
    )
    why = f"; {reply.not_continued}" if reply.not_continued else ""
    return (
        f"The {what}'s reply was cut at its limit ({limit:,} tokens){after}{why}. No draft "
        "version was saved from it: the cut text is kept on this stage. Start the run again "
        "with narrower instructions or a smaller packet."
    )


def _what(name: str) -> str:
    return Stage.Name(name).label.lower()
