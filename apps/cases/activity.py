"""The case page's activity feed: the audit log of a case told in words.

A lawyer reads "Laura Lawyer uploaded contract.pdf", not `document.upload`. Reads (page views,
lists, searches, downloads) are folded: one person's reads in a row, with nothing else in
between, are one line ("looked at 3 documents, the document list and 1 search"). Changes are
folded too: one person's same change in a row is one line with a count ("uploaded a.pdf,
b.pdf, c.pdf and 3 more", or the same sentence "6 times"). The admin's audit log tells each
event with these sentences too (`event_text`, registered by CasesConfig.ready); nothing here
writes.
"""

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from apps.accounts import selectors as account_selectors
from apps.accounts.models import AuditEvent, User

# How many audit rows one feed reads at most, however many lines they make.
FEED_SCAN_ROWS = 400

# What a read shows, as (singular, plural) nouns; a plural of None means "the one thing"
# (counted once however often it was opened). Reads of distinct targets are counted by target.
_READS: dict[str, tuple[str, str | None]] = {
    "case.view": ("the case overview", None),
    "case.search": ("search", "searches"),
    "case.json": ("the case's details", None),
    "member.list": ("the member list", None),
    "tag.list": ("the tag list", None),
    "document.list": ("the document list", None),
    "document.view": ("document", "documents"),
    "document.pages": ("the pages of a document", "the pages of documents"),
    "document.page": ("page image", "page images"),
    "document.download": ("download", "downloads"),
    "bates.lookup": ("Bates lookup", "Bates lookups"),
    "packet.list": ("the packet list", None),
    "packet.view": ("packet", "packets"),
    "packet.pages": ("the pages of a packet", "the pages of packets"),
    "packet.versions": ("a packet's versions", "packets' versions"),
    "packet.compare": ("packet comparison", "packet comparisons"),
    "production.list": ("the production list", None),
    "production.view": ("production", "productions"),
    "production.download": ("production download", "production downloads"),
    "production.export_view": ("production export", "production exports"),
    "production.export_download": ("export download", "export downloads"),
    "draft.list": ("the draft list", None),
    "draft.view": ("draft", "drafts"),
    "draft.version_view": ("draft version", "draft versions"),
    "draft.version_diff": ("version comparison", "version comparisons"),
    "run.list": ("the run list", None),
    "run.view": ("run", "runs"),
    "case.events": ("the case's events", None),
    "case.stream": ("the case's live stream", None),
    "run.events": ("a run's events", "runs' events"),
    "run.stream": ("a run's live stream", "runs' live streams"),
    "run.transactions_csv": ("transactions table", "transactions tables"),
    "finding.list": ("the verifier's findings", None),
    "production.preview": ("stamped preview", "stamped previews"),
}

# Reads of these are counted by distinct target (three views of one document are one document).
_BY_TARGET = {"document.view", "packet.view", "production.view", "draft.view", "run.view"}

# Writes: a sentence after the actor's name. {target} is the audit row's target label.
_WRITES: dict[str, str] = {
    "case.create": "opened the case",
    "case.update": "changed the case's details",
    "case.member_add": "added {member} to the case",
    "case.member_role": "changed {member}'s role",
    "case.member_remove": "removed {member} from the case",
    "case.break_glass": "opened the case without being a member (break-glass)",
    "document.upload": "uploaded {target}",
    "document.generated": "stored generated document {target}",
    "document.flagged": "uploaded {target}, flagged as lexweb's own output",
    "document.production_volume": "stored production volume {target}",
    "document.withdraw": "withdrew {target}",
    "document.restore": "restored {target}",
    "document.tag": "tagged documents",
    "document.untag": "removed a tag from documents",
    "production.create": "made production {target}",
    "production.export": "exported production {target}",
    "packet.create": "created packet {target}",
    "packet.items_add": "added documents to packet {target}",
    "packet.item_remove": "removed a document from packet {target}",
    "packet.item_refused": "was refused adding a document to packet {target}",
    "packet.freeze": "froze packet {target}",
    "packet.new_version": "started a new version of packet {target}",
    "draft.create": "started draft {target}",
    "draft.version_add": "saved a new version of {target}",
    "draft.approve": "approved {target}",
    "draft.export": "exported {target}",
    "run.start": "started run {target}",
    "run.cancel": "cancelled run {target}",
    "run.gate_override": "overrode the gate of run {target}",
    "run.approved": "approved run {target}",
    "run.rejected": "rejected run {target}",
    "production.document_included": "included {target} in a production, with a reason",
    "production.document_withheld": "withheld {target} from a production (privilege log)",
    "document.flag_cleared": "cleared the registry's flag on {target}",
    "finding.override": "overrode a verifier finding",
    "verification.request": "asked for verification of {target}",
    "artifact.registered": "registered generated output {target}",
    "job.retry": "queued a failed job again",
    "admin.add": "added {target} in the admin",
    "admin.change": "changed {target} in the admin",
    "admin.delete": "deleted {target} in the admin",
    "admin.action": "ran an admin action on {target}",
}

_ROLE_WORDS = {"lawyer": "lawyer", "staff": "staff"}


@dataclass(frozen=True)
class FeedItem:
    """One line of the feed. `at` is the newest moment of the line, `since` the oldest (the same
    for a single event); `count` is how many audit rows the line stands for."""

    at: datetime
    since: datetime
    actor: str
    text: str
    count: int
    kind: str  # "read" or "change"
    target_type: str = ""
    target_id: str = ""


def _actor_name(event: AuditEvent) -> str:
    if event.actor is not None:
        return event.actor.full_name or event.actor.email
    return event.actor_label or "lexweb"


def _member_of(event: AuditEvent) -> str:
    # A membership's label is "<user> on <case number> as <role>" (Membership.__str__).
    who = event.target_label.split(" on ", 1)[0].strip()
    return who or "a member"


def _change_text(event: AuditEvent) -> str:
    template = _WRITES.get(event.action)
    target = event.target_label or "an item"
    if template is None:
        words = event.action.replace(".", " ").replace("_", " ")
        return f"{words} ({target})" if event.target_label else words
    text = template.format(target=target, member=_member_of(event))
    detail = event.detail if isinstance(event.detail, dict) else {}
    role = _ROLE_WORDS.get(str(detail.get("role", "")))
    if event.action in ("case.member_add", "case.member_role") and role:
        text += f" as {role}" if event.action == "case.member_add" else f" to {role}"
    if event.action == "case.update" and detail.get("fields"):
        text += f" ({str(detail['fields']).replace(',', ', ')})"
    if event.action in ("document.withdraw", "case.break_glass") and detail.get("reason"):
        text += f": “{str(detail['reason'])[:200]}”"
    if event.action in ("document.tag", "document.untag") and detail.get("tag"):
        count = detail.get("count")
        noun = "document" if count == 1 else "documents"
        verb = "tagged" if event.action == "document.tag" else "removed the tag from"
        text = f"{verb} {count} {noun} “{str(detail['tag'])[:100]}”"
    return text


# Every code the feed tells in words; the admin's audit log tells them with the same sentences
# (registered by CasesConfig.ready with apps.accounts.audit_words).
TOLD_CODES = frozenset(_READS) | frozenset(_WRITES)


def event_text(event: AuditEvent) -> str:
    """One event in words, as the feed tells it when it stands alone ("uploaded a.pdf",
    "looked at the document list", "looked at a page image")."""
    if event.action not in _READS:
        return _change_text(event)
    text = _read_text([event])
    # One counted read: "a page image", not "1 page image".
    singular = _READS[event.action][0]
    if text == f"looked at 1 {singular}":
        article = "an" if singular[0].lower() in "aeiou" else "a"
        text = f"looked at {article} {singular}"
    return text


def _read_text(events: list[AuditEvent]) -> str:
    seen: dict[str, set[str]] = {}
    counts: Counter[str] = Counter()
    order: list[str] = []
    for event in reversed(events):  # oldest first, so the sentence follows what was done
        if event.action not in order:
            order.append(event.action)
        counts[event.action] += 1
        seen.setdefault(event.action, set()).add(event.target_id)
    parts: list[str] = []
    for action in order:
        singular, plural = _READS[action]
        if plural is None:
            parts.append(singular)
            continue
        n = len(seen[action]) if action in _BY_TARGET else counts[action]
        noun = singular if n == 1 else plural
        # "the pages of a document" reads without a number; "3 documents" with one.
        parts.append(noun if singular.startswith(("the ", "a ")) else f"{n} {noun}")
    if len(events) == 1 and events[0].action in _BY_TARGET and events[0].target_label:
        return f"looked at {_READS[events[0].action][0]} {events[0].target_label}"
    return "looked at " + _join(parts)


# A folded line names at most this many targets ("a.pdf, b.pdf, c.pdf and 3 more").
FOLD_NAMES = 3


def _changes_text(events: list[AuditEvent]) -> str:
    """One line for one person's same change done several times in a row (newest first):
    the sentence once when it is the same each time, else the sentence over the targets."""
    texts = list(dict.fromkeys(_change_text(event) for event in reversed(events)))
    if len(texts) == 1:
        return texts[0]
    template = _WRITES.get(events[0].action, "")
    if template.endswith("{target}") and "{member}" not in template:
        targets = list(dict.fromkeys(e.target_label or "an item" for e in reversed(events)))
        named = targets[:FOLD_NAMES]
        more = len(targets) - len(named)
        names = _join([*named, f"{more} more"]) if more else _join(named)
        return template.replace("{target}", names)
    more = len(texts) - 1
    return f"{texts[-1]} (and {more} more like it)"


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def activity_feed_for_user(*, user: User, case_id: int, limit: int = 20) -> list[FeedItem]:
    """The case's latest activity in words, newest first, at most `limit` lines, from the last
    FEED_SCAN_ROWS audit rows the user may read (members only: anyone else gets nothing)."""
    rows = list(account_selectors.audit_list_for_user(user=user, case_id=case_id)[:FEED_SCAN_ROWS])
    items: list[FeedItem] = []
    group: list[AuditEvent] = []

    def close_group() -> None:
        if group:
            items.append(
                FeedItem(
                    at=group[0].at,
                    since=group[-1].at,
                    actor=_actor_name(group[0]),
                    text=_read_text(group),
                    count=len(group),
                    kind="read",
                )
            )
            group.clear()

    changes: list[AuditEvent] = []

    def close_changes() -> None:
        if changes:
            first = changes[0]
            one_target = all(
                (e.target_type, e.target_id) == (first.target_type, first.target_id)
                for e in changes
            )
            items.append(
                FeedItem(
                    at=first.at,
                    since=changes[-1].at,
                    actor=_actor_name(first),
                    text=_changes_text(changes) if len(changes) > 1 else _change_text(first),
                    count=len(changes),
                    kind="change",
                    target_type=first.target_type if one_target else "",
                    target_id=first.target_id if one_target else "",
                )
            )
            changes.clear()

    def close_both() -> None:
        """The open lines, the newer first (rows come newest first)."""
        if group and changes and group[0].at > changes[0].at:
            close_group()
        close_changes()
        close_group()

    # A person's reads while they repeat one change (the list read again after each upload)
    # neither break the change's line nor make a line each time.
    for event in rows:
        if event.action in _READS:
            if changes and changes[0].actor_id != event.actor_id:
                close_both()
            elif group and group[0].actor_id != event.actor_id:
                close_group()
            group.append(event)
            continue
        if not changes or (
            changes[0].actor_id,
            changes[0].actor_label,
            changes[0].action,
        ) != (event.actor_id, event.actor_label, event.action):
            close_both()
            if len(items) >= limit:
                break
        changes.append(event)
    close_both()
    return items[:limit]
